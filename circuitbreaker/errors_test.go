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
	"github.com/rampart-go/rampart/internal/nilcheck"
)

func TestOpenError_MessageSaysWhy(t *testing.T) {
	assert.Equal(t, "circuitbreaker: open (half-open, every probe slot taken)", (&circuitbreaker.OpenError{}).Error())
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 2 * time.Second})
		fail(t, b, 1, errors.New("boom"))
		assert.Equal(t, "circuitbreaker: open (retry after 2s): tripped by: boom", openErr(t, b).Error())
		time.Sleep(time.Nanosecond)
		assert.Equal(t, "circuitbreaker: open (retry after 2s): tripped by: boom", openErr(t, b).Error(), "rounded up to a millisecond")
		time.Sleep(time.Millisecond)
		assert.Equal(t, "circuitbreaker: open (retry after 1.999s): tripped by: boom", openErr(t, b).Error())
	})
	sw := &circuitbreaker.Switch{}
	b := newBreaker(t, circuitbreaker.Config{Switch: sw})
	sw.ForceOpen(nil)
	assert.Equal(t, "circuitbreaker: forced open (until released)", openErr(t, b).Error())
}

func TestErrors_CB19_SpecialDurationsNamedWhereTheyMeanSomething(t *testing.T) {
	t.Run("config", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			cfg  circuitbreaker.Config
			want string
		}{
			{name: "growth from immediate", cfg: circuitbreaker.Config{CoolDown: circuitbreaker.Immediate, MaxCoolDown: time.Second},
				want: "circuitbreaker: MaxCoolDown needs a positive, finite CoolDown, got Immediate"},
			{name: "growth from forever", cfg: circuitbreaker.Config{CoolDown: rampart.Forever, MaxCoolDown: rampart.Forever},
				want: "circuitbreaker: MaxCoolDown needs a positive, finite CoolDown, got rampart.Forever"},
			{name: "immediate max cool-down", cfg: circuitbreaker.Config{MaxCoolDown: circuitbreaker.Immediate},
				want: "circuitbreaker: MaxCoolDown must be >= 0, got -1ns"},
			{name: "immediate probe lease", cfg: circuitbreaker.Config{ProbeLease: circuitbreaker.Immediate},
				want: "circuitbreaker: ProbeLease must be >= 0, got -1ns"},
			{name: "immediate slow-call threshold", cfg: circuitbreaker.Config{Policy: circuitbreaker.SlowCalls{Threshold: circuitbreaker.Immediate}},
				want: "circuitbreaker: SlowCalls.Threshold must be >= 0, got -1ns"},
			{name: "immediate window period", cfg: circuitbreaker.Config{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: circuitbreaker.Immediate}}},
				want: "circuitbreaker: FailureRate.Window.Period must be >= 0, got -1ns"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := circuitbreaker.New(tc.cfg)
				require.EqualError(t, err, tc.want)
			})
		}
		_, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{IdleTimeout: circuitbreaker.Immediate})
		require.EqualError(t, err, "circuitbreaker: GroupConfig.IdleTimeout must be >= 0 (0 means 10m0s; rampart.Forever never drops), got -1ns")
	})
	t.Run("open forever", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: rampart.Forever})
			fail(t, b, 1, errBoom)
			time.Sleep(time.Hour)
			assert.Equal(t, "circuitbreaker: open (until reset): tripped by: boom", openErr(t, b).Error())
		})
	})
	t.Run("forced open", func(t *testing.T) {
		sw := &circuitbreaker.Switch{}
		b := newBreaker(t, circuitbreaker.Config{Switch: sw})
		sw.ForceOpen(errors.New("maintenance"))
		assert.Equal(t, "circuitbreaker: forced open (until released): maintenance", openErr(t, b).Error())
	})
}

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

// TestBreaker_CB2_RejectionCarriesCause checks that every refusal has the
// failure that tripped the breaker (or the reason it was forced open) in
// its error chain, while still matching ErrOpen and being an *OpenError.
func TestBreaker_CB2_RejectionCarriesCause(t *testing.T) {
	cause := fmt.Errorf("backend: %w", &statusError{code: 500})
	tests := []struct {
		name string
		cfg  circuitbreaker.Config
		// refuse brings b to a refusing state whose cause is cause.
		reject func(t *testing.T, b *circuitbreaker.Breaker, sw *circuitbreaker.Switch)
	}{{
		name:   "open",
		cfg:    circuitbreaker.Config{CoolDown: time.Second},
		reject: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) { fail(t, b, 1, cause) },
	}, {
		name: "open forever",
		cfg:  circuitbreaker.Config{CoolDown: rampart.Forever},
		reject: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) {
			fail(t, b, 1, cause)
		},
	}, {
		name: "half-open, probe slots taken",
		cfg:  circuitbreaker.Config{CoolDown: time.Second},
		reject: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) {
			fail(t, b, 1, cause)
			time.Sleep(time.Second)
			_, err := b.TryAcquire() // the probe, never finished
			require.NoError(t, err)
		},
	}, {
		name:   "forced open",
		cfg:    circuitbreaker.Config{},
		reject: func(t *testing.T, _ *circuitbreaker.Breaker, sw *circuitbreaker.Switch) { sw.ForceOpen(cause) },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sw := &circuitbreaker.Switch{}
				cfg := tt.cfg
				cfg.Policy, cfg.Switch = circuitbreaker.Consecutive{Failures: 1}, sw
				b := newBreaker(t, cfg)
				tt.reject(t, b, sw)
				_, err := b.TryAcquire()
				require.ErrorIs(t, err, circuitbreaker.ErrOpen)
				assert.ErrorIs(t, err, cause)
				var se *statusError
				require.ErrorAs(t, err, &se, "errors.As reaches the cause's type")
				assert.Equal(t, 500, se.code)
				var oe *circuitbreaker.OpenError
				require.ErrorAs(t, err, &oe)
				assert.Same(t, oe, err, "the rejection itself is the *OpenError")
				assert.Equal(t, cause, oe.Unwrap())
			})
		})
	}
}

// TestBreaker_CB2_RejectionWithoutCauseUnwrapsToNil checks a refusal
// whose breaker was forced open without a reason.
func TestBreaker_CB2_RejectionWithoutCauseUnwrapsToNil(t *testing.T) {
	sw := &circuitbreaker.Switch{}
	b := newBreaker(t, circuitbreaker.Config{Switch: sw})
	sw.ForceOpen(nil)
	oe := openErr(t, b)
	assert.NoError(t, oe.Unwrap())
	assert.Equal(t, "circuitbreaker: forced open (until released)", oe.Error())
}

// TestBreaker_CB2_SharedRejectionStillFree checks that refusals still
// allocate nothing and are shared within a millisecond now that they carry
// their cause.
func TestBreaker_CB2_SharedRejectionStillFree(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: rampart.Forever})
	fail(t, b, 1, errBoom)
	_, first := b.TryAcquire()
	allocs := testing.AllocsPerRun(1000, func() {
		_, err := b.TryAcquire()
		if err != first || !errors.Is(err, errBoom) {
			t.Fatal("rejection not shared, or without its cause")
		}
	})
	assert.Zero(t, allocs)
}

// TestOpenError_CB15_NilOpenError calls every exported method of a nil
// *OpenError, which a caller holds after an errors.As that found none.
func TestOpenError_CB15_NilOpenError(t *testing.T) {
	var e *circuitbreaker.OpenError
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Error", Call: func() any { return e.Error() }, Want: "<nil>"},
		{Name: "RetryAfter", Call: func() any { return e.RetryAfter() }, Want: time.Duration(0)},
		{Name: "Unwrap", Call: func() any { return e.Unwrap() }, Want: nil},
		{Name: "Is", Call: func() any { return e.Is(circuitbreaker.ErrOpen) }, Want: true},
	})
}
