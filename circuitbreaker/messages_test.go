package circuitbreaker_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// TestMessages_CB19_SayWhyAndUntilWhen checks the refusal, snapshot and
// transition texts of each kind of open breaker against one another: a
// trip says "tripped by" its cause and when a probe comes (the cool-down
// rounded up to a millisecond, or "until reset" for a rampart.Forever one); a
// breaker forced open says "forced open" with the reason (not a trip) and
// "until released" (Reset does not release it).
func TestMessages_CB19_SayWhyAndUntilWhen(t *testing.T) {
	errMaint := errors.New("maint")
	tests := []struct {
		name string
		// open opens b, which has a Switch sw, its Name "db" and a policy
		// that trips on one failure.
		open                func(t *testing.T, b *circuitbreaker.Breaker, sw *circuitbreaker.Switch)
		cooldown            time.Duration
		wantErr, wantState  string
		wantTransition      string
		stillOpenAfterReset bool
	}{{
		name:     "tripped",
		open:     func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) { fail(t, b, 1, errBoom) },
		cooldown: 30 * time.Second,
		wantErr:  `circuitbreaker "db": open (retry after 30s): tripped by: boom`, wantState: `"db": open (retry after 30s): tripped by: boom`,
		wantTransition: `"db": closed > open: tripped by: boom`,
	}, {
		name:     "tripped, rampart.Forever cool-down",
		open:     func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) { fail(t, b, 1, errBoom) },
		cooldown: rampart.Forever,
		wantErr:  `circuitbreaker "db": open (until reset): tripped by: boom`, wantState: `"db": open (until reset): tripped by: boom`,
		wantTransition: `"db": closed > open: tripped by: boom`,
	}, {
		name:     "forced open with a reason",
		open:     func(t *testing.T, _ *circuitbreaker.Breaker, sw *circuitbreaker.Switch) { sw.ForceOpen(errMaint) },
		cooldown: 30 * time.Second,
		wantErr:  `circuitbreaker "db": forced open (until released): maint`, wantState: `"db": forced-open (until released): maint`,
		wantTransition:      `"db": closed > forced-open: maint`,
		stillOpenAfterReset: true,
	}, {
		name:     "forced open without a reason",
		open:     func(t *testing.T, _ *circuitbreaker.Breaker, sw *circuitbreaker.Switch) { sw.ForceOpen(nil) },
		cooldown: 30 * time.Second,
		wantErr:  `circuitbreaker "db": forced open (until released)`, wantState: `"db": forced-open (until released)`,
		wantTransition:      `"db": closed > forced-open`,
		stillOpenAfterReset: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sw := &circuitbreaker.Switch{}
				b := newBreaker(t, circuitbreaker.Config{
					Name: "db", Switch: sw, Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: tt.cooldown,
				})
				rec := record(b)
				tt.open(t, b, sw)
				time.Sleep(time.Nanosecond) // a cool-down is now 29.999999999s
				assert.Equal(t, tt.wantErr, openErr(t, b).Error())
				assert.Equal(t, tt.wantState, b.State().String())
				trs := rec.all()
				require.Len(t, trs, 1)
				assert.Equal(t, tt.wantTransition, trs[0].String())

				b.Reset()
				_, err := b.TryAcquire()
				assert.Equal(t, tt.stillOpenAfterReset, err != nil, "Reset releases no forced breaker")
			})
		})
	}
}

// TestMessages_CB19_HalfOpenWithEveryProbeSlotTaken checks the refusal
// and the snapshot of a HalfOpen breaker whose one probe is in flight.
func TestMessages_CB19_HalfOpenWithEveryProbeSlotTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second})
		fail(t, b, 1, errBoom)
		time.Sleep(time.Second)
		p, err := b.TryAcquire()
		require.NoError(t, err)
		defer p.Ignore()
		assert.Equal(t, "circuitbreaker: open (half-open, every probe slot taken): tripped by: boom", openErr(t, b).Error())
		assert.Equal(t, "half-open: probes 1 in flight, 0 succeeded, 0 failed: tripped by: boom", b.State().String())
	})
}
