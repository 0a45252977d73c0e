package circuitbreaker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
)

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
