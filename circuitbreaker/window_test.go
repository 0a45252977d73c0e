package circuitbreaker_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

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

func TestPolicies_CB13_TimeWindowDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Period: 10 * time.Second},
		}})
		time.Sleep(500 * time.Millisecond)
		outcomes(t, b, "S") // in the first of 10 one-second buckets
		time.Sleep(9499 * time.Millisecond)
		assert.Equal(t, circuitbreaker.Counts{Calls: 1}, b.State().Counts)
		time.Sleep(time.Millisecond) // 10s: the first bucket leaves the window
		assert.Equal(t, circuitbreaker.Counts{}, b.State().Counts)

		outcomes(t, b, strings.Repeat("F", 19))
		assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: 19, Failures: 19}}, b.State(),
			"MinCalls defaults to 20 for a time window")
		outcomes(t, b, "F")
		assert.Equal(t, circuitbreaker.Open, b.State().State)
	})
}

// A gap of exactly two windows puts the next outcome in the same bucket
// slot as an old one: the old counts must not survive it.
func TestPolicies_CB12_TimeWindowGapOfWholeWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: 2},
			Ratio:  0.5,
		}})
		time.Sleep(500 * time.Millisecond)
		outcomes(t, b, "F") // bucket 0
		time.Sleep(20 * time.Second)
		outcomes(t, b, "S") // bucket 20, the same slot as bucket 0
		assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: 1}}, b.State(),
			"a stale F would make 1 of 2 and trip")
		outcomes(t, b, "F")
		assert.Equal(t, circuitbreaker.Open, b.State().State)
	})
}

// The time window keeps running totals. Outcomes may reach it out of
// order (SlowCalls's clock is read before the breaker's lock is taken): a
// late outcome still in the window counts in its own bucket, one whose
// bucket has already left does not count, and no bucket leaves twice.
func TestPolicies_CB12_TimeWindowOutOfOrderOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, err := circuitbreaker.SlowCalls{
			Threshold: time.Hour,
			Window:    circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: 100},
		}.NewTracker()
		require.NoError(t, err)
		base := time.Now()
		record := func(o rampart.Outcome, at time.Duration) circuitbreaker.Counts {
			t.Helper()
			require.False(t, tr.Record(circuitbreaker.Call{Outcome: o, Now: base.Add(at), Monotonic: at}), "never trips below MinCalls")
			return circuitbreaker.CountsOf(tr)
		}
		s, f := rampart.Success, rampart.Failure
		assert.Equal(t, circuitbreaker.Counts{Calls: 1, Failures: 1}, record(f, 0))
		assert.Equal(t, circuitbreaker.Counts{Calls: 2, Failures: 1}, record(s, 5*time.Second))
		assert.Equal(t, circuitbreaker.Counts{Calls: 3, Failures: 1}, record(s, 2*time.Second), "late, in the window")
		assert.Equal(t, circuitbreaker.Counts{Calls: 4, Failures: 2}, record(f, 9999*time.Millisecond))
		assert.Equal(t, circuitbreaker.Counts{Calls: 4, Failures: 1}, record(s, 10500*time.Millisecond),
			"bucket 0 left: its failure with it")
		assert.Equal(t, circuitbreaker.Counts{Calls: 4, Failures: 1}, record(f, 500*time.Millisecond),
			"late, and its bucket has left: not counted")
		assert.Equal(t, circuitbreaker.Counts{Calls: 3, Failures: 1}, record(s, 15500*time.Millisecond),
			"buckets 2 and 5 left")
		assert.Equal(t, circuitbreaker.Counts{Calls: 1}, record(s, 100*time.Second), "a gap: every bucket left")
		time.Sleep(111 * time.Second)
		assert.Equal(t, circuitbreaker.Counts{}, circuitbreaker.CountsOf(tr), "reading the counters moves the window on")
		tr.Reset(circuitbreaker.Closed)
		assert.Equal(t, circuitbreaker.Counts{Calls: 1, Failures: 1}, record(f, 112*time.Second))
	})
}
