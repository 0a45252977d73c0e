package circuitbreaker_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

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

// tripsAt is the reference rule of the failure-rate policies, in exact
// integer arithmetic: with at least min calls, failures/calls reaches
// ppm/1,000,000.
func tripsAt(calls, failures, min int, ppm uint32) bool {
	return calls >= min && int64(failures)*1_000_000 >= int64(ppm)*int64(calls)
}

// fuzzRatio maps any fuzz input to a ratio in parts per million, 1..1e6.
func fuzzRatio(ppm uint32) uint32 { return ppm%1_000_000 + 1 }

// FuzzPolicies_CB12_FailureRateCountWindow checks a count-window
// FailureRate against a model that keeps the last Size outcomes in a slice
// and judges them exactly: the breaker must trip at the same outcome, and
// report the same counters in between, for any size, minimum and ratio,
// with resets at any point (CB9). Each outcome byte is a success (o&3 is 0
// or 2), a failure (1) or a Reset (3).
func FuzzPolicies_CB12_FailureRateCountWindow(f *testing.F) {
	f.Add(uint16(10), uint16(5), uint32(299_999), []byte{0, 0, 0, 0, 1, 0, 0, 0, 1, 1})
	f.Add(uint16(4), uint16(0), uint32(499_999), []byte{1, 0, 0, 0, 0, 1, 1})
	f.Add(uint16(3), uint16(1), uint32(333_332), []byte{0, 0, 1, 0, 0, 1})
	f.Add(uint16(3), uint16(3), uint32(499_999), []byte{1, 1, 0, 1, 1, 1, 0, 3, 1})
	// A window of one call; resets on an empty window and between outcomes.
	f.Add(uint16(0), uint16(1), uint32(249_999), []byte{1, 0, 0, 1, 0, 1, 1, 0})
	f.Add(uint16(0), uint16(1), uint32(249_999), []byte{3, 3, 0, 3, 1, 0, 0, 1, 1, 0, 3, 1, 0, 3, 0, 3, 0, 0})
	f.Fuzz(func(t *testing.T, size, min uint16, ppm uint32, outcomes []byte) {
		n := int(size%300) + 1
		m := int(min) % (n + 1)
		ppm = fuzzRatio(ppm)
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Size: n, MinCalls: m},
			Ratio:  float64(ppm) / 1_000_000,
		}})
		minCalls := m
		if minCalls == 0 {
			minCalls = n // the documented default
		}
		var window []bool
		for i, o := range outcomes {
			if o&3 == 3 {
				b.Reset()
				window = nil
				require.Equal(t, circuitbreaker.Snapshot{}, b.State(), "outcome %d: reset", i)
				continue
			}
			failed := o&3 == 1
			if failed {
				fail(t, b, 1, errBoom)
			} else {
				succeed(t, b, 1)
			}
			window = append(window, failed)
			if len(window) > n {
				window = window[1:]
			}
			failures := 0
			for _, w := range window {
				if w {
					failures++
				}
			}
			s := b.State()
			if tripsAt(len(window), failures, minCalls, ppm) {
				require.Equal(t, circuitbreaker.Open, s.State, "outcome %d: %d of %d failed", i, failures, len(window))
				b.Reset()
				window = nil
				continue
			}
			require.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: len(window), Failures: failures}}, s,
				"outcome %d", i)
		}
	})
}

// FuzzPolicies_CB12_FailureRateTimeWindow checks a time-window FailureRate
// against a model that keeps every outcome with its time and counts those
// whose bucket is among the newest Buckets: same trips, same counters,
// including after idle gaps of any length and resets at any point (CB9).
// Each step waits s>>2 half buckets, then records a success (s&3 == 0), a
// failure (1), nothing (2) or resets the breaker (3).
func FuzzPolicies_CB12_FailureRateTimeWindow(f *testing.F) {
	f.Add(uint8(10), uint16(1000), uint16(3), uint32(499_999), []byte{0, 1, 200, 1, 253, 253, 0, 1, 0, 9})
	f.Add(uint8(1), uint16(10), uint16(2), uint32(999_999), []byte{1, 40, 1, 0})
	f.Add(uint8(3), uint16(7), uint16(0), uint32(0), []byte{4, 5, 4, 3, 5, 8, 1, 254, 2, 3, 0})
	// Six buckets of 1ms: gaps of 1, 3 and 7.5 buckets.
	f.Add(uint8(5), uint16(0), uint16(4), uint32(749_999), []byte{0, 1, 9, 24, 1, 61, 1, 0, 1})
	// One bucket: many calls in the same instant; failures that trip at once.
	f.Add(uint8(0), uint16(2), uint16(4), uint32(249_999), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint8(5), uint16(0), uint16(1), uint32(249_999), []byte{1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, buckets uint8, periodMs, min uint16, ppm uint32, steps []byte) {
		nb := int(buckets%20) + 1
		period := time.Duration(int(periodMs)%5000+nb) * time.Millisecond
		m := int(min) % 50
		minCalls := m
		if minCalls == 0 {
			minCalls = 20 // the documented default of a time window
		}
		ppm = fuzzRatio(ppm)
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{
				Window: circuitbreaker.Window{Period: period, Buckets: nb, MinCalls: m},
				Ratio:  float64(ppm) / 1_000_000,
			}})
			width := period / time.Duration(nb)
			bucketOf := func(at time.Time) int64 { return int64(at.Sub(start) / width) }
			type event struct {
				bucket int64
				fail   bool
			}
			var events []event
			live := func() (calls, failures int) {
				now := bucketOf(time.Now())
				for _, e := range events {
					if e.bucket > now-int64(nb) {
						calls++
						if e.fail {
							failures++
						}
					}
				}
				return calls, failures
			}
			for i, s := range steps {
				// The high bits wait 0 to 63 half buckets.
				time.Sleep(time.Duration(s>>2) * width / 2)
				calls, failures := live()
				require.Equal(t, circuitbreaker.Counts{Calls: calls, Failures: failures}, b.State().Counts, "step %d, before", i)
				switch s & 3 {
				case 2:
					continue
				case 3:
					b.Reset()
					events = nil
					require.Equal(t, circuitbreaker.Snapshot{}, b.State(), "step %d: reset", i)
					continue
				}
				failed := s&3 == 1
				if failed {
					fail(t, b, 1, errBoom)
				} else {
					succeed(t, b, 1)
				}
				events = append(events, event{bucket: bucketOf(time.Now()), fail: failed})
				calls, failures = live()
				if tripsAt(calls, failures, minCalls, ppm) {
					require.Equal(t, circuitbreaker.Open, b.State().State, "step %d: %d of %d failed", i, failures, calls)
					b.Reset()
					events = nil
					continue
				}
				require.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: calls, Failures: failures}}, b.State(),
					"step %d", i)
			}
		})
	})
}
