package circuitbreaker_test

import (
	"errors"
	"fmt"
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

func TestStrings_CB19_ForeverAndImmediateAreWords(t *testing.T) {
	errMaint := errors.New("maintenance")
	for _, tc := range []struct {
		name string
		v    fmt.Stringer
		want string
	}{
		{name: "forced open", v: circuitbreaker.Snapshot{Name: "db", State: circuitbreaker.ForcedOpen, RetryAfter: rampart.Forever, Cause: errMaint},
			want: `"db": forced-open (until released): maintenance`},
		{name: "open forever", v: circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: rampart.Forever, Cause: errBoom},
			want: `open (until reset): tripped by: boom`},
		{name: "open", v: circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: 1500 * time.Millisecond, Cause: errBoom},
			want: `open (retry after 1.5s): tripped by: boom`},
		{name: "closed", v: circuitbreaker.Snapshot{State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: 2, Calls: 10, Failures: 3, SlowCalls: 1}},
			want: `closed: 2 consecutive failures; 10 calls, 3 failures, 1 slow calls counted`},
		{name: "closed, no window", v: circuitbreaker.Snapshot{State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: 2}},
			want: `closed: 2 consecutive failures`},
		{name: "closed, window only", v: circuitbreaker.Snapshot{State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{Calls: 10}},
			want: `closed: 10 calls, 0 failures, 0 slow calls counted`},
		{name: "closed, nothing counted", v: circuitbreaker.Snapshot{State: circuitbreaker.Closed},
			want: `closed`},
		{name: "half-open", v: circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, ProbesInFlight: 1, ProbesSucceeded: 2, Cause: errBoom},
			want: `half-open: probes 1 in flight, 2 succeeded, 0 failed: tripped by: boom`},
		{name: "forced closed", v: circuitbreaker.Snapshot{State: circuitbreaker.ForcedClosed},
			want: `forced-closed`},
		{name: "transition", v: circuitbreaker.Transition{Name: "db", From: circuitbreaker.Closed, To: circuitbreaker.Open, Cause: errBoom},
			want: `"db": closed > open: tripped by: boom`},
		{name: "transition without cause", v: circuitbreaker.Transition{From: circuitbreaker.HalfOpen, To: circuitbreaker.Closed},
			want: `half-open > closed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.v.String())
			assert.Equal(t, tc.want, fmt.Sprint(tc.v))
		})
	}
}

// A Consecutive breaker describes only the run it keeps, and a TripFunc
// breaker the counts it keeps since the Closed period began.
func TestStrings_CB19_SnapshotOfPoliciesWithoutAWindow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy circuitbreaker.Policy
		want   string
	}{
		{name: "consecutive", policy: circuitbreaker.Consecutive{Failures: 5}, want: `"db": closed: 1 consecutive failures`},
		{name: "custom", policy: circuitbreaker.TripFunc(func(circuitbreaker.Counts) bool { return false }), want: `"db": closed: 1 consecutive failures; 1 calls, 1 failures, 0 slow calls counted`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Policy: tc.policy})
			require.NoError(t, err)
			p, err := br.TryAcquire()
			require.NoError(t, err)
			p.Failure(errBoom)
			assert.Equal(t, tc.want, br.State().String())
		})
	}
}
