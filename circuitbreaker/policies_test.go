package circuitbreaker_test

import (
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// outcomes records a sequence: 'S' success, 'F' failure.
func outcomes(t *testing.T, b *circuitbreaker.Breaker, seq string) {
	t.Helper()
	for _, c := range seq {
		if c == 'S' {
			succeed(t, b, 1)
		} else {
			fail(t, b, 1, errBoom)
		}
	}
}

// timed records one success that took d.
func timed(t *testing.T, b *circuitbreaker.Breaker, d time.Duration) {
	t.Helper()
	p, err := b.TryAcquire()
	require.NoError(t, err)
	time.Sleep(d)
	p.Success()
}

func TestPolicy_CB12_FailureRateCountWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 10, MinCalls: 5}, Ratio: 0.3},
		})
		outcomes(t, b, "SSSSFSSSF")
		assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: 9, Failures: 2}}, b.State())
		outcomes(t, b, "F") // 3 of 10: exactly the ratio
		assert.Equal(t, circuitbreaker.Open, b.State().State)
	})
}

// A success into a full count window with no failure is counted without
// the lock (WantsSuccess is false) and changes nothing: the counters, and
// the order in which later calls leave the window, stay exact.
func TestPolicy_CB12_FailureRateCleanCountWindow(t *testing.T) {
	tr, err := circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 4, MinCalls: 1}, Ratio: 0.5}.NewTracker()
	require.NoError(t, err)
	for range 3 {
		tr.Record(circuitbreaker.Call{Outcome: rampart.Success})
		assert.True(t, circuitbreaker.WantsSuccess(tr), "the window is not full")
	}
	tr.Record(circuitbreaker.Call{Outcome: rampart.Success})
	assert.False(t, circuitbreaker.WantsSuccess(tr), "full of successes")
	tr.Record(circuitbreaker.Call{Outcome: rampart.Failure})
	assert.True(t, circuitbreaker.WantsSuccess(tr), "a failure is in the window")
	for range 3 {
		tr.Record(circuitbreaker.Call{Outcome: rampart.Success})
		assert.True(t, circuitbreaker.WantsSuccess(tr), "the failure is still in the window")
	}
	tr.Record(circuitbreaker.Call{Outcome: rampart.Success})
	assert.False(t, circuitbreaker.WantsSuccess(tr), "the failure left the window")
	tr.Reset(circuitbreaker.Closed)
	assert.True(t, circuitbreaker.WantsSuccess(tr), "an empty window is not full")

	timed, err := circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: time.Second}}.NewTracker()
	require.NoError(t, err)
	assert.True(t, circuitbreaker.WantsSuccess(timed), "a time window counts every success")

	b := newBreaker(t, circuitbreaker.Config{
		Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 4, MinCalls: 1}, Ratio: 0.5},
	})
	outcomes(t, b, "SSSSSSS") // the last three are counted without the lock
	assert.Equal(t, circuitbreaker.Counts{Calls: 4}, b.State().Counts)
	outcomes(t, b, "F")
	assert.Equal(t, circuitbreaker.Counts{Calls: 4, Failures: 1}, b.State().Counts)
	outcomes(t, b, "SSS")
	assert.Equal(t, circuitbreaker.Counts{Calls: 4, Failures: 1}, b.State().Counts, "window: F S S S")
	outcomes(t, b, "S")
	assert.Equal(t, circuitbreaker.Counts{Calls: 4}, b.State().Counts, "the failure left after exactly four calls")
	outcomes(t, b, "SF")
	assert.Equal(t, circuitbreaker.Counts{Calls: 4, Failures: 1}, b.State().Counts)
	outcomes(t, b, "F")
	assert.Equal(t, circuitbreaker.Open, b.State().State, "2 of 4 failed")
	// Any asks every policy: a clean count window and a zero run skip the lock.
	anyT, err := circuitbreaker.Any(circuitbreaker.Consecutive{}, circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 1}}).NewTracker()
	require.NoError(t, err)
	anyT.Record(circuitbreaker.Call{Outcome: rampart.Success})
	assert.False(t, circuitbreaker.WantsSuccess(anyT))
}

func TestPolicy_CB12_FailureRateMinCallsAndSliding(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{
		Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 4}, Ratio: 0.5},
	})
	outcomes(t, b, "FF")
	assert.Equal(t, circuitbreaker.Closed, b.State().State, "fewer than MinCalls (= Size) calls")
	b.Reset()
	outcomes(t, b, "FSSS")
	outcomes(t, b, "F") // the first F slid out: S S S F
	assert.Equal(t, circuitbreaker.Counts{Calls: 4, Failures: 1}, b.State().Counts)
	outcomes(t, b, "F") // S S F F
	assert.Equal(t, circuitbreaker.Open, b.State().State)
}

func TestPolicy_CB12_FailureRateProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := circuitbreaker.Config{
			Policy:    circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 2}, Ratio: 0.5},
			CoolDown:  time.Second,
			MaxProbes: 4,
		}
		b := newBreaker(t, cfg)
		trip := func() {
			outcomes(t, b, "FF")
			time.Sleep(time.Second)
		}
		trip()
		// Four probes are judged; two failures of four reach one half.
		outcomes(t, b, "SFS")
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		outcomes(t, b, "S") // three successes: the ratio can no longer be reached
		assert.Equal(t, circuitbreaker.Closed, b.State().State)

		trip()
		outcomes(t, b, "F")
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		outcomes(t, b, "F")
		assert.Equal(t, circuitbreaker.Open, b.State().State, "two of four failed whatever the rest do")
	})
}

func TestPolicy_CB12_FailureRateTimeWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy: circuitbreaker.FailureRate{
				Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: 3},
				Ratio:  0.5,
			},
		})
		outcomes(t, b, "SF")
		time.Sleep(9999 * time.Millisecond)
		assert.Equal(t, circuitbreaker.Counts{Calls: 2, Failures: 1}, b.State().Counts)
		time.Sleep(time.Millisecond)
		assert.Equal(t, circuitbreaker.Counts{}, b.State().Counts, "the first bucket left the window")

		outcomes(t, b, "F")
		time.Sleep(25 * time.Second) // an idle gap longer than the window
		assert.Equal(t, circuitbreaker.Counts{}, b.State().Counts)
		outcomes(t, b, "SF") // without stale buckets: 1 of 2, below MinCalls
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		time.Sleep(5 * time.Second)
		outcomes(t, b, "F")
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: circuitbreaker.DefaultCoolDown, Cause: errBoom}, b.State())
	})
}

func TestPolicy_CB12_SlowCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy: circuitbreaker.SlowCalls{
				Threshold: time.Second,
				Window:    circuitbreaker.Window{Size: 4, MinCalls: 2},
				Ratio:     0.5,
			},
			CoolDown: time.Minute,
		})
		timed(t, b, 100*time.Millisecond)
		timed(t, b, 999*time.Millisecond)
		timed(t, b, time.Second) // at the threshold is slow
		assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: 3, SlowCalls: 1}}, b.State())
		fail(t, b, 1, errBoom) // a fast failure is not slow
		assert.Equal(t, circuitbreaker.Counts{Calls: 4, Failures: 1, SlowCalls: 1}, b.State().Counts)
		timed(t, b, 2*time.Second) // window: 999ms, 1s, fail, 2s: 2 of 4 slow
		assert.Equal(t, circuitbreaker.Open, b.State().State)

		time.Sleep(time.Minute)
		timed(t, b, 3*time.Second) // a slow probe re-opens
		assert.Equal(t, circuitbreaker.Open, b.State().State)
		time.Sleep(time.Minute)
		timed(t, b, 10*time.Millisecond)
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
	})
}

// Judged on latency alone, a probe that failed fast would close a breaker
// with only a slow-call policy: a failed probe counts as a bad one.
func TestPolicy_CB12_SlowCallsFailedProbeDoesNotClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:   circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 1}},
			CoolDown: time.Minute,
		})
		timed(t, b, time.Second)
		assert.Equal(t, circuitbreaker.Open, b.State().State)

		time.Sleep(time.Minute)
		fail(t, b, 1, errBoom) // fast, but failed
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Minute, Cause: errBoom}, b.State(),
			"the failed probe re-opened the breaker")

		time.Sleep(time.Minute)
		timed(t, b, 10*time.Millisecond)
		assert.Equal(t, circuitbreaker.Closed, b.State().State, "a fast success closes")
	})
}

func TestPolicy_CB12_SlowCallsFailedProbesCountAsBad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:    circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 1}, Ratio: 0.5},
			CoolDown:  time.Minute,
			MaxProbes: 4,
		})
		timed(t, b, time.Second)
		time.Sleep(time.Minute)
		outcomes(t, b, "SSF") // 1 bad of 4 so far
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		fail(t, b, 1, errBoom) // 2 bad of 4: the ratio is reached
		assert.Equal(t, circuitbreaker.Open, b.State().State)
	})
}

// A trip or re-open decided on a slow success has ErrSlowCalls as its
// cause, even when an earlier failure is in the window; one decided on a
// slow failure has its error.
func TestPolicy_CB2_SlowCallsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:   circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 2}, Ratio: 0.5},
			CoolDown: time.Minute,
		})
		rec := record(b)
		fail(t, b, 1, errBoom) // fast: not slow
		timed(t, b, time.Second)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Minute, Cause: circuitbreaker.ErrSlowCalls}, b.State())
		assert.Same(t, circuitbreaker.ErrSlowCalls, openErr(t, b).Cause)
		assert.Equal(t, "circuitbreaker: open (retry after 1m0s): tripped by: circuitbreaker: slow calls", openErr(t, b).Error())

		time.Sleep(time.Minute)
		timed(t, b, 2*time.Second) // a slow probe that succeeded
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Minute, Cause: circuitbreaker.ErrSlowCalls}, b.State())

		slowErr := errors.New("slow and failed")
		b.Reset()
		timed(t, b, 0)
		p, err := b.TryAcquire()
		require.NoError(t, err)
		time.Sleep(time.Second)
		p.Failure(slowErr) // 1 of 2 slow: trips
		assert.Same(t, slowErr, b.State().Cause, "a slow failure is reported with its error")

		var causes []error
		for _, tr := range rec.all() {
			causes = append(causes, tr.Cause)
		}
		assert.Equal(t, []error{circuitbreaker.ErrSlowCalls, nil, circuitbreaker.ErrSlowCalls, nil, slowErr}, causes)
	})
}

func TestPolicy_CB2_SlowCallsCauseThroughCombinators(t *testing.T) {
	slow := circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 1}}
	anySlow := circuitbreaker.Any(circuitbreaker.Consecutive{Failures: 1}, slow)
	for _, tt := range []struct {
		name   string
		policy circuitbreaker.Policy
	}{
		{name: "Any", policy: anySlow},
		{name: "SuccessRate", policy: circuitbreaker.SuccessRate{Trip: slow}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBreaker(t, circuitbreaker.Config{Policy: tt.policy, CoolDown: time.Minute})
				timed(t, b, time.Second)
				assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Minute, Cause: circuitbreaker.ErrSlowCalls}, b.State())
				b.Reset()
				p, err := b.TryAcquire()
				require.NoError(t, err)
				time.Sleep(time.Second)
				p.Failure(errBoom)
				assert.Same(t, errBoom, b.State().Cause, "a slow failure trips with its error")
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: anySlow, CoolDown: time.Minute})
		fail(t, b, 1, errBoom)
		time.Sleep(time.Minute)
		timed(t, b, time.Second) // Consecutive would close; SlowCalls re-opens
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Minute, Cause: circuitbreaker.ErrSlowCalls}, b.State(),
			"the slow probe re-opened the breaker, not the old failure")
	})
}

func TestPolicy_CB12_SuccessRateProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy: circuitbreaker.SuccessRate{
				Trip:   circuitbreaker.Consecutive{Failures: 1},
				Probes: 5, Ratio: 0.6,
			},
			CoolDown: time.Second,
		})
		fail(t, b, 1, errBoom)
		time.Sleep(time.Second)
		outcomes(t, b, "SFSF")
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.HalfOpen, Cause: errBoom, ProbesSucceeded: 2, ProbesFailed: 2,
		}, b.State(), "a failed probe does not re-open while 3 of 5 can still succeed")
		outcomes(t, b, "S")
		assert.Equal(t, circuitbreaker.Closed, b.State().State)

		fail(t, b, 1, errBoom)
		time.Sleep(time.Second)
		outcomes(t, b, "FSF")
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		outcomes(t, b, "F")
		assert.Equal(t, circuitbreaker.Open, b.State().State, "3 of 5 can no longer succeed")
	})
}

func TestPolicy_CB12_AnyTripsWhenAnyTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy: circuitbreaker.Any(
				circuitbreaker.Consecutive{Failures: 3},
				circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 2}},
			),
			CoolDown: time.Second,
		})
		outcomes(t, b, "FF")
		assert.Equal(t, circuitbreaker.Counts{ConsecutiveFailures: 2, Calls: 2, Failures: 2}, b.State().Counts)
		timed(t, b, time.Second)
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		timed(t, b, time.Second) // both calls in the slow window are slow
		assert.Equal(t, circuitbreaker.Open, b.State().State)

		time.Sleep(time.Second)
		timed(t, b, 10*time.Millisecond) // every policy says close
		assert.Equal(t, circuitbreaker.Closed, b.State().State)

		outcomes(t, b, "FFF")
		assert.Equal(t, circuitbreaker.Open, b.State().State, "the consecutive policy trips too")
		time.Sleep(time.Second)
		timed(t, b, 2*time.Second) // a slow success: the slow-call policy re-opens
		assert.Equal(t, circuitbreaker.Open, b.State().State)
	})
}

func TestPolicy_CB13_Validation(t *testing.T) {
	tests := []struct {
		name   string
		policy circuitbreaker.Policy
		want   string
	}{
		{name: "ratio above one", policy: circuitbreaker.FailureRate{Ratio: 1.5},
			want: "circuitbreaker: FailureRate.Ratio must be in (0, 1], got 1.5"},
		{name: "negative ratio", policy: circuitbreaker.FailureRate{Ratio: -0.1},
			want: "circuitbreaker: FailureRate.Ratio must be in (0, 1], got -0.1"},
		{name: "NaN ratio", policy: circuitbreaker.SlowCalls{Ratio: math.NaN()},
			want: "circuitbreaker: SlowCalls.Ratio must be in (0, 1], got NaN"},
		{name: "size and period", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 5, Period: time.Second}},
			want: "circuitbreaker: FailureRate.Window.Size must be 0 with a Period, got 5"},
		{name: "buckets without period", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Buckets: 5}},
			want: "circuitbreaker: FailureRate.Window.Buckets needs a Period, got 5 buckets without one"},
		{name: "too many buckets", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: time.Second, Buckets: 5000}},
			want: "circuitbreaker: FailureRate.Window.Buckets must be in [0, 1000], got 5000"},
		{name: "period too short", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: 5, Buckets: 10}},
			want: "circuitbreaker: FailureRate.Window.Period must be at least Buckets (10) nanoseconds, got 5ns"},
		{name: "negative period", policy: circuitbreaker.SlowCalls{Window: circuitbreaker.Window{Period: -time.Second}},
			want: "circuitbreaker: SlowCalls.Window.Period must be >= 0, got -1s"},
		{name: "absurd size", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 1 << 30}},
			want: "circuitbreaker: FailureRate.Window.Size must be <= 1000000, got 1073741824"},
		{name: "min calls above size", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 10, MinCalls: 11}},
			want: "circuitbreaker: FailureRate.Window.MinCalls must be <= Size (10), got 11"},
		{name: "negative threshold", policy: circuitbreaker.SlowCalls{Threshold: -time.Second},
			want: "circuitbreaker: SlowCalls.Threshold must be >= 0, got -1s"},
		{name: "negative probes", policy: circuitbreaker.SuccessRate{Probes: -1},
			want: "circuitbreaker: SuccessRate.Probes must be >= 0, got -1"},
		{name: "probe ratio zero point", policy: circuitbreaker.SuccessRate{Ratio: 2},
			want: "circuitbreaker: SuccessRate.Ratio must be in (0, 1], got 2"},
		{name: "bad trip policy", policy: circuitbreaker.SuccessRate{Trip: circuitbreaker.Consecutive{Failures: -3}},
			want: "circuitbreaker: Consecutive.Failures must be >= 0, got -3 (SuccessRate.Trip)"},
		{name: "empty any", policy: circuitbreaker.Any(),
			want: "circuitbreaker: Any needs at least one policy"},
		{name: "nil in any", policy: circuitbreaker.Any(circuitbreaker.Consecutive{}, nil),
			want: "circuitbreaker: Any policy 1 is nil"},
		{name: "bad policy in any", policy: circuitbreaker.Any(circuitbreaker.FailureRate{Ratio: 3}),
			want: "circuitbreaker: FailureRate.Ratio must be in (0, 1], got 3 (Any policy 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := circuitbreaker.New(circuitbreaker.Config{Policy: tt.policy})
			require.EqualError(t, err, tt.want)
			assert.Nil(t, b)
		})
	}
}
