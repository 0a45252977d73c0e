package circuitbreaker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
)

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
