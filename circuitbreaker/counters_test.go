package circuitbreaker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// TestBreaker_CB11_CountersOfCurrentPeriod checks that State reports the
// counters of the period the breaker is in after every kind of transition:
// never counters left over from a period that has ended.
func TestBreaker_CB11_CountersOfCurrentPeriod(t *testing.T) {
	consecutive := circuitbreaker.Consecutive{Failures: 3}
	rate := circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 4, MinCalls: 3}, Ratio: 1}
	tests := []struct {
		name   string
		policy circuitbreaker.Policy
		// change brings a fresh breaker (Failures 3 or a rate window of 3
		// calls, CoolDown 1s, attached to sw) to the state under test.
		change func(t *testing.T, b *circuitbreaker.Breaker, sw *circuitbreaker.Switch)
		want   circuitbreaker.Snapshot
	}{{
		name:   "trip",
		policy: consecutive,
		change: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) { fail(t, b, 3, errBoom) },
		want:   circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Second, Cause: errBoom},
	}, {
		name:   "force closed right after a trip",
		policy: consecutive,
		change: func(t *testing.T, b *circuitbreaker.Breaker, sw *circuitbreaker.Switch) {
			fail(t, b, 3, errBoom)
			sw.ForceClosed()
		},
		want: circuitbreaker.Snapshot{State: circuitbreaker.ForcedClosed},
	}, {
		name:   "force closed right after a trip, rate policy",
		policy: rate,
		change: func(t *testing.T, b *circuitbreaker.Breaker, sw *circuitbreaker.Switch) {
			fail(t, b, 3, errBoom)
			sw.ForceClosed()
		},
		want: circuitbreaker.Snapshot{State: circuitbreaker.ForcedClosed},
	}, {
		name:   "force closed from closed with failures pending",
		policy: consecutive,
		change: func(t *testing.T, b *circuitbreaker.Breaker, sw *circuitbreaker.Switch) {
			fail(t, b, 2, errBoom)
			sw.ForceClosed()
		},
		want: circuitbreaker.Snapshot{State: circuitbreaker.ForcedClosed},
	}, {
		name:   "force open then closed",
		policy: rate,
		change: func(t *testing.T, b *circuitbreaker.Breaker, sw *circuitbreaker.Switch) {
			fail(t, b, 2, errBoom)
			sw.ForceOpen(errMaintenance)
			sw.ForceClosed()
		},
		want: circuitbreaker.Snapshot{State: circuitbreaker.ForcedClosed},
	}, {
		name:   "force open",
		policy: consecutive,
		change: func(t *testing.T, b *circuitbreaker.Breaker, sw *circuitbreaker.Switch) {
			fail(t, b, 2, errBoom)
			sw.ForceOpen(errMaintenance)
		},
		want: circuitbreaker.Snapshot{State: circuitbreaker.ForcedOpen, RetryAfter: rampart.Forever, Cause: errMaintenance},
	}, {
		name:   "release",
		policy: consecutive,
		change: func(t *testing.T, b *circuitbreaker.Breaker, sw *circuitbreaker.Switch) {
			fail(t, b, 3, errBoom)
			sw.ForceClosed()
			sw.Release()
		},
		want: circuitbreaker.Snapshot{State: circuitbreaker.Closed},
	}, {
		name:   "reset from closed",
		policy: rate,
		change: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) {
			fail(t, b, 2, errBoom)
			b.Reset()
		},
		want: circuitbreaker.Snapshot{State: circuitbreaker.Closed},
	}, {
		name:   "reset while forced closed",
		policy: consecutive,
		change: func(t *testing.T, b *circuitbreaker.Breaker, sw *circuitbreaker.Switch) {
			fail(t, b, 2, errBoom)
			sw.ForceClosed()
			b.Reset()
		},
		want: circuitbreaker.Snapshot{State: circuitbreaker.ForcedClosed},
	}, {
		name:   "probe closes",
		policy: consecutive,
		change: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) {
			fail(t, b, 3, errBoom)
			time.Sleep(time.Second)
			succeed(t, b, 1)
		},
		want: circuitbreaker.Snapshot{State: circuitbreaker.Closed},
	}, {
		name:   "probe re-opens",
		policy: consecutive,
		change: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) {
			fail(t, b, 3, errBoom)
			time.Sleep(time.Second)
			fail(t, b, 1, errNotFound)
		},
		want: circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Second, Cause: errNotFound},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sw := &circuitbreaker.Switch{}
				b := newBreaker(t, circuitbreaker.Config{Policy: tt.policy, CoolDown: time.Second, Switch: sw})
				tt.change(t, b, sw)
				assert.Equal(t, tt.want, b.State())
				if tt.want.State == circuitbreaker.ForcedClosed {
					// What the period records from now on is its own.
					p, err := b.TryAcquire()
					require.NoError(t, err)
					p.Failure(errBoom)
					assert.Equal(t, tt.want, b.State(), "forced closed records nothing")
				}
			})
		})
	}
}
