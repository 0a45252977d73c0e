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

func TestPolicies_CB13_FailureRateDefaults(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{}})
	outcomes(t, b, strings.Repeat("F", 99))
	assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: 99, Failures: 99}}, b.State(),
		"MinCalls defaults to the Size, 100")

	b = newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{}})
	outcomes(t, b, strings.Repeat("S", 50)+strings.Repeat("F", 49)+"S")
	assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: 100, Failures: 49}}, b.State())
	outcomes(t, b, "F") // the first S leaves the 100-call window: 50 of 100
	assert.Equal(t, circuitbreaker.Open, b.State().State, "the default Ratio is one half")
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

func TestPolicies_CB13_SlowCallsDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.SlowCalls{}})
		timed(t, b, time.Minute-time.Millisecond) // below the default Threshold of a minute
		for range 99 {
			timed(t, b, time.Minute)
		}
		assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: 100, SlowCalls: 99}}, b.State(),
			"the default Ratio is 1: every call in the window must be slow")
		timed(t, b, time.Minute) // the fast call leaves the 100-call window
		assert.Equal(t, circuitbreaker.Open, b.State().State)
	})
}

func TestPolicies_CB13_SuccessRateDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.SuccessRate{}})
		outcomes(t, b, "FFFF")
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		outcomes(t, b, "F") // the default Trip is Consecutive{}: five failures
		assert.Equal(t, circuitbreaker.Open, b.State().State)

		time.Sleep(circuitbreaker.DefaultCoolDown)
		outcomes(t, b, "FFSSSSSSS") // 10 probes at 0.8: two may fail
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.HalfOpen, Cause: errBoom, ProbesSucceeded: 7, ProbesFailed: 2,
		}, b.State())
		outcomes(t, b, "S") // the eighth success
		assert.Equal(t, circuitbreaker.Closed, b.State().State)

		outcomes(t, b, "FFFFF")
		time.Sleep(circuitbreaker.DefaultCoolDown)
		outcomes(t, b, "SFF")
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		outcomes(t, b, "F") // a third failure: 8 of 10 is out of reach
		assert.Equal(t, circuitbreaker.Open, b.State().State)
	})
}

// SuccessRate with Ratio 1 is "N consecutive probe successes": it behaves
// exactly as Consecutive with Successes N.
func TestPolicies_CB12_SuccessRateRatioOneIsConsecutive(t *testing.T) {
	policies := []struct {
		name   string
		policy circuitbreaker.Policy
	}{
		{name: "Consecutive", policy: circuitbreaker.Consecutive{Failures: 1, Successes: 3}},
		{name: "SuccessRate", policy: circuitbreaker.SuccessRate{
			Trip: circuitbreaker.Consecutive{Failures: 1}, Probes: 3, Ratio: 1,
		}},
	}
	for _, tt := range policies {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBreaker(t, circuitbreaker.Config{Policy: tt.policy, CoolDown: time.Second})
				rec := record(b)
				outcomes(t, b, "F")
				time.Sleep(time.Second)
				outcomes(t, b, "SS")
				assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
				outcomes(t, b, "F")
				time.Sleep(time.Second)
				outcomes(t, b, "SSS")
				assert.Equal(t, []string{
					"closed>open", "open>half-open", "half-open>open", "open>half-open", "half-open>closed",
				}, rec.edges())
			})
		})
	}
}

// SuccessRate judges more probes than may be in flight at once: further
// probes are admitted as earlier ones finish.
func TestPolicies_CB3_SuccessRateMoreProbesThanSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy: circuitbreaker.SuccessRate{
				Trip: circuitbreaker.Consecutive{Failures: 1}, Probes: 4, Ratio: 0.5,
			},
			CoolDown:  time.Second,
			MaxProbes: 2,
		})
		outcomes(t, b, "F")
		time.Sleep(time.Second)

		p1, err := b.TryAcquire()
		require.NoError(t, err)
		p2, err := b.TryAcquire()
		require.NoError(t, err)
		assert.Zero(t, openErr(t, b).RetryAfter(), "both slots are taken")

		require.True(t, p1.Failure(errBoom))
		p3, err := b.TryAcquire()
		require.NoError(t, err)
		require.True(t, p2.Failure(errBoom)) // 2 of 4 failed: 2 of 4 may still succeed
		p4, err := b.TryAcquire()
		require.NoError(t, err)
		require.True(t, p3.Success())
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.HalfOpen, Cause: errBoom, ProbesInFlight: 1, ProbesSucceeded: 1, ProbesFailed: 2,
		}, b.State())
		require.True(t, p4.Success())
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
	})
}

// Each policy asks for the clock readings it needs and no more: a count
// window reads no clock, a time window one reading per outcome, a slow-call
// policy two per call; a combination asks for the most any member needs.
func TestPolicies_CB12_Timing(t *testing.T) {
	count := circuitbreaker.FailureRate{}
	windowed := circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: time.Second}}
	slow := circuitbreaker.SlowCalls{}
	tests := []struct {
		name   string
		policy circuitbreaker.Policy
		want   circuitbreaker.Timing
	}{
		{name: "Consecutive", policy: circuitbreaker.Consecutive{}, want: circuitbreaker.TimingNone},
		{name: "count window", policy: count, want: circuitbreaker.TimingNone},
		// A FailureRate time window reads the breaker's clock itself, and
		// only near a bucket boundary.
		{name: "time window", policy: windowed, want: circuitbreaker.TimingNone},
		{name: "slow calls", policy: slow, want: circuitbreaker.TimingLatency},
		{name: "slow calls in a time window", policy: circuitbreaker.SlowCalls{Window: windowed.Window}, want: circuitbreaker.TimingLatency},
		{name: "success rate over a count window", policy: circuitbreaker.SuccessRate{Trip: count}, want: circuitbreaker.TimingNone},
		{name: "success rate over a time window", policy: circuitbreaker.SuccessRate{Trip: windowed}, want: circuitbreaker.TimingNone},
		{name: "any of count and time", policy: circuitbreaker.Any(count, windowed), want: circuitbreaker.TimingNone},
		{name: "any with slow calls", policy: circuitbreaker.Any(slow, count), want: circuitbreaker.TimingLatency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := tt.policy.NewTracker()
			require.NoError(t, err)
			assert.Equal(t, tt.want, circuitbreaker.TimingOf(tr))
		})
	}
}

// In HalfOpen, Any closes only when every member's probe rule says close.
func TestPolicies_CB12_AnyClosesWhenAllClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy: circuitbreaker.Any(
				circuitbreaker.Consecutive{Failures: 3, Successes: 2},
				circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 1}}, // one probe decides
			),
			CoolDown: time.Second,
		})
		outcomes(t, b, "F") // FailureRate: 1 of 1
		time.Sleep(time.Second)
		outcomes(t, b, "S") // FailureRate says close, Consecutive waits
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom, ProbesSucceeded: 1}, b.State())
		outcomes(t, b, "S")
		assert.Equal(t, circuitbreaker.Snapshot{}, b.State(), "closed, with every member's history cleared")
	})
}

// Any reports, for each counter, the largest value any member keeps (CB11).
func TestPolicies_CB11_AnyCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Any(
			circuitbreaker.Consecutive{Failures: 10},
			circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 4}, Ratio: 1},
			circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 2}},
		)})
		outcomes(t, b, "FF")
		timed(t, b, time.Second)
		outcomes(t, b, "F")
		// Consecutive: a run of 1. FailureRate: F F S F. SlowCalls: S(slow) F.
		assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{
			ConsecutiveFailures: 1, Calls: 4, Failures: 3, SlowCalls: 1,
		}}, b.State())
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
