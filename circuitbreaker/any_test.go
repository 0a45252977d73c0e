package circuitbreaker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/circuitbreaker"
)

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
