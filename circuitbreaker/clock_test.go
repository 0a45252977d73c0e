package circuitbreaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// A supplied clock whose wall reading steps an hour forward and back moves
// neither the cool-down nor the time window: both are measured on its
// Monotonic readings.
func TestClock_CB20_WallJumpMovesNoCooldownNorWindow(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{
		Clock:        clk,
		ResetTimeout: 10 * time.Second,
		Policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: 3},
		},
	})
	fail(t, b, 1, errBoom)
	succeed(t, b, 1)
	for _, jump := range []time.Duration{time.Hour, -time.Hour, -time.Hour} {
		clk.Jump(jump)
		assert.Equal(t, circuitbreaker.Counters{Calls: 2, Failures: 1}, b.State().Counters, "after a wall step of %v", jump)
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
		Clock:        clk,
		ResetTimeout: 30 * time.Second,
		ProbeLease:   time.Minute,
		Policy:       circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 2}},
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
	assert.Equal(t, circuitbreaker.Counters{Calls: 2, SlowCalls: 1}, b.State().Counters, "latency measured on the clock")
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
	assert.Equal(t, time.Duration(0), openErr(t, b).RetryAfter, "the lease still holds the slot")
	clk.Advance(time.Nanosecond)
	call(0) // the lease ended: this probe takes the slot and closes
	closed := halfOpen.Add(time.Minute)
	assert.False(t, lost.Success(), "a probe whose lease ended does not count")

	want := []circuitbreaker.Transition{
		{From: circuitbreaker.Closed, To: circuitbreaker.Open, Time: tripped, Cause: circuitbreaker.ErrSlowCalls},
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
	reads := clk.Reads()
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := b.TryAcquire()
		p.Success()
	})
	assert.Zero(t, allocs)
	assert.Equal(t, reads, clk.Reads())
}
