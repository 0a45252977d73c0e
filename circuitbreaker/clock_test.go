package circuitbreaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// A supplied clock whose wall reading steps an hour forward and back moves
// neither the cool-down nor the time window: both are measured on its
// Monotonic readings.
func TestClock_CB20_WallJumpMovesNoCooldownNorWindow(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{
		Clock:    clk,
		CoolDown: 10 * time.Second,
		Policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: 3},
		},
	})
	fail(t, b, 1, errBoom)
	succeed(t, b, 1)
	for _, jump := range []time.Duration{time.Hour, -time.Hour, -time.Hour} {
		clk.Jump(jump)
		assert.Equal(t, circuitbreaker.Counts{Calls: 2, Failures: 1}, b.State().Counts, "after a wall step of %v", jump)
	}
	clk.Advance(9 * time.Second)
	fail(t, b, 1, errBoom) // 2 of 3 failed: trips
	clk.Jump(time.Hour)
	assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: 10 * time.Second, Cause: errBoom}, b.State())
	clk.Jump(-2 * time.Hour)
	assert.Equal(t, 10*time.Second, b.State().RetryAfter)
	clk.Advance(10*time.Second - time.Nanosecond)
	assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Nanosecond, Cause: errBoom}, b.State())
	clk.Advance(time.Nanosecond)
	assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
}

// A supplied clock drives the whole cycle: the cool-down, the probe lease,
// slow-call latencies, the time of every transition and the group's idle
// time are all its readings.
func TestClock_CB20_DrivesTheCycle(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{
		Clock:      clk,
		CoolDown:   30 * time.Second,
		ProbeLease: time.Minute,
		Policy:     circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 2}},
	})
	rec := record(b)
	call := func(took time.Duration) {
		t.Helper()
		p, err := b.TryAcquire()
		require.NoError(t, err)
		clk.Advance(took)
		p.Success()
	}
	start := clk.Now()
	call(time.Second)
	call(time.Second - time.Nanosecond)
	assert.Equal(t, circuitbreaker.Counts{Calls: 2, SlowCalls: 1}, b.State().Counts, "latency measured on the clock")
	call(time.Second)
	call(time.Second) // the window holds two slow calls: trips
	tripped := start.Add(4*time.Second - time.Nanosecond)
	assert.Equal(t, circuitbreaker.Snapshot{
		State: circuitbreaker.Open, RetryAfter: 30 * time.Second, Cause: circuitbreaker.ErrSlowCalls,
	}, b.State())

	clk.Jump(time.Hour) // timestamps follow the wall reading, durations do not
	clk.Advance(30*time.Second - time.Nanosecond)
	assert.Equal(t, time.Nanosecond, b.State().RetryAfter)
	openErr(t, b)
	clk.Advance(time.Nanosecond)
	lost, err := b.TryAcquire() // the first probe, never finished
	require.NoError(t, err)
	halfOpen := tripped.Add(time.Hour + 30*time.Second)
	assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, ProbesInFlight: 1, Cause: circuitbreaker.ErrSlowCalls}, b.State())
	clk.Advance(time.Minute - time.Nanosecond)
	assert.Equal(t, time.Duration(0), openErr(t, b).RetryAfter(), "the lease still holds the slot")
	clk.Advance(time.Nanosecond)
	call(0) // the lease ended: this probe takes the slot and closes
	closed := halfOpen.Add(time.Minute)
	assert.False(t, lost.Success(), "a probe whose lease ended does not count")

	want := []circuitbreaker.Transition{
		{From: circuitbreaker.Closed, To: circuitbreaker.Open, Time: tripped, Cause: circuitbreaker.ErrSlowCalls, RetryAfter: 30 * time.Second,
			Counts: circuitbreaker.Counts{Calls: 2, SlowCalls: 2}}, // the counts it tripped on
		{From: circuitbreaker.Open, To: circuitbreaker.HalfOpen, Time: halfOpen},
		{From: circuitbreaker.HalfOpen, To: circuitbreaker.Closed, Time: closed},
	}
	assert.Equal(t, want, rec.all())
}

// A group measures the idle time of its breakers on the supplied clock.
func TestClock_CB20_GroupIdleTime(t *testing.T) {
	clk := newFakeClock()
	g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
		Breaker:     circuitbreaker.Config{Clock: clk},
		IdleTimeout: time.Minute,
	})
	require.NoError(t, err)
	g.Breaker("a")
	clk.Jump(time.Hour)
	assert.Equal(t, 1, g.Len(), "a wall step is no idle time")
	clk.Advance(time.Minute - time.Nanosecond)
	assert.Equal(t, 1, g.Len())
	clk.Advance(time.Nanosecond)
	assert.Equal(t, 0, g.Len(), "idle for a minute of the clock")
}

// With a supplied clock, a call through a Closed breaker whose policy
// needs no time reads the clock not once, and allocates nothing.
func TestClock_CB20_ClosedSuccessReadsNoClock(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{Clock: clk})
	before := reads(clk)
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := b.TryAcquire()
		p.Success()
	})
	assert.Zero(t, allocs)
	assert.Equal(t, before, reads(clk))
}

// An Open breaker refuses without reading the clock until its timer marks
// the end of the cool-down as near (an eighth of it, at most a second,
// before the end); from then on each refusal reads the clock, and the
// first caller after the end is the probe, exactly on time.
func TestClock_CB21_OpenRejectionReadsNoClock(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{Clock: clk, Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 16 * time.Second})
	fail(t, b, 1, errBoom)
	first := openErr(t, b)
	before := reads(clk)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := b.TryAcquire(); err != first {
			t.Fatalf("rejection %v, want the period's prebuilt one", err)
		}
	})
	assert.Zero(t, allocs)
	assert.Equal(t, before, reads(clk), "no clock read per rejection")

	clk.Advance(15*time.Second - time.Nanosecond)
	openErr(t, b)
	assert.Equal(t, before, reads(clk), "the timer has not fired yet")
	assert.Equal(t, time.Second+time.Nanosecond, first.RetryAfter(), "asking reads the clock")
	clk.Advance(time.Nanosecond) // the timer fires, a second before the end
	before = reads(clk)
	assert.Same(t, first, openErr(t, b))
	assert.Equal(t, before+1, reads(clk), "near the end, a rejection reads the clock once")
	clk.Advance(time.Second - time.Nanosecond)
	assert.Equal(t, time.Nanosecond, openErr(t, b).RetryAfter())
	clk.Advance(time.Nanosecond)
	p, err := b.TryAcquire()
	require.NoError(t, err, "the first call after the cool-down is the probe")
	assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
	assert.Zero(t, first.RetryAfter(), "the cool-down is over")
	p.Success()
	assert.Equal(t, circuitbreaker.Closed, b.State().State)
}

// The timer armed when the breaker opens never outlives the Open period:
// a Reset, every manual change and the end of the cool-down leave none
// pending, and a cool-down that ends at once or never arms none.
func TestClock_CB21_NoTimerLeftBehind(t *testing.T) {
	clk := newFakeClock()
	sw := &circuitbreaker.Switch{}
	b := newBreaker(t, circuitbreaker.Config{Clock: clk, Switch: sw, Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute})
	trip := func() {
		t.Helper()
		fail(t, b, 1, errBoom)
		require.Equal(t, circuitbreaker.Open, b.State().State)
		require.Equal(t, 1, clk.Pending(), "armed when the breaker opens")
	}
	trip()
	b.Reset()
	assert.Zero(t, clk.Pending(), "after Reset")
	trip()
	sw.ForceOpen(errBoom)
	assert.Zero(t, clk.Pending(), "after ForceOpen")
	sw.Release()
	trip()
	sw.ForceClosed()
	assert.Zero(t, clk.Pending(), "after ForceClosed")
	sw.Release()
	trip()
	clk.Advance(time.Minute)
	assert.Zero(t, clk.Pending(), "fired")
	fail(t, b, 1, errBoom) // the probe fails: a fresh Open period
	assert.Equal(t, 1, clk.Pending(), "re-armed on re-open")
	b.Reset()
	assert.Zero(t, clk.Pending())

	for _, cooldown := range []time.Duration{circuitbreaker.Immediate, rampart.Forever} {
		b := newBreaker(t, circuitbreaker.Config{Clock: clk, Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: cooldown})
		fail(t, b, 1, errBoom)
		assert.Zero(t, clk.Pending(), "cool-down %v", cooldown)
	}
}

// timeWindow is the FailureRate of the time-window tests: ten buckets of
// a second, judged from minCalls calls at a failure ratio of one half.
func timeWindow(minCalls int) circuitbreaker.FailureRate {
	return circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: minCalls}, Ratio: 0.5}
}

// A success in a time window reads no clock once the window's timer runs
// (the first outcome starts it), and still counts in its own bucket: the
// window leaves it behind exactly a Period after its bucket began. Near a
// bucket boundary successes read the clock again, so one just before the
// boundary and one at it land in their own buckets.
func TestClock_CB22_TimeWindowSuccessReadsNoClock(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{Clock: clk, Policy: timeWindow(100)})
	succeed(t, b, 1) // starts the window's timer
	require.Equal(t, 1, clk.Pending())
	clk.Advance(100 * time.Millisecond)
	before := reads(clk)
	allocs := testing.AllocsPerRun(99, func() { succeed(t, b, 1) })
	assert.Zero(t, allocs)
	assert.Equal(t, before, reads(clk), "no clock read per success")
	assert.Equal(t, circuitbreaker.Counts{Calls: 101}, b.State().Counts)

	clk.Advance(900*time.Millisecond - time.Nanosecond) // 1ns before the boundary
	succeed(t, b, 1)
	clk.Advance(time.Nanosecond) // at the boundary: bucket 1
	succeed(t, b, 2)
	clk.Advance(9 * time.Second) // 10s: bucket 0 leaves
	assert.Equal(t, circuitbreaker.Counts{Calls: 2}, b.State().Counts, "bucket 0 left with its 102 successes")
	clk.Advance(time.Second) // 11s: bucket 1 leaves, and the window is empty
	assert.Equal(t, circuitbreaker.Counts{}, b.State().Counts)
	clk.Advance(10 * time.Millisecond)
	assert.Zero(t, clk.Pending(), "an empty window stops its timer at its next tick")
}

// A success that can trip a time window (the one that brings it to
// MinCalls while half of it failed) takes the breaker's lock and trips it.
func TestClock_CB22_TimeWindowTripsOnTheSuccessThatReachesMinCalls(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{Clock: clk, Policy: timeWindow(4)})
	succeed(t, b, 1)
	clk.Advance(100 * time.Millisecond)
	fail(t, b, 2, errBoom)
	succeed(t, b, 1)
	assert.Equal(t, circuitbreaker.Open, b.State().State, "2 failures of 4 calls")
}

// A Reset disowns the successes counted without the lock, and stops the
// window's timer.
func TestClock_CB22_TimeWindowResetForgetsEverything(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{Clock: clk, Policy: timeWindow(100)})
	succeed(t, b, 1)
	clk.Advance(100 * time.Millisecond)
	succeed(t, b, 10)
	b.Reset()
	assert.Zero(t, clk.Pending())
	assert.Equal(t, circuitbreaker.Counts{}, b.State().Counts)
	succeed(t, b, 3)
	assert.Equal(t, circuitbreaker.Counts{Calls: 3}, b.State().Counts)
}
