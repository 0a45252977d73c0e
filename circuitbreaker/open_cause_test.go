package circuitbreaker_test

import (
	"context"
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

// statusError is a dependency's own error type, for errors.As.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("status %d", e.code) }

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

// TestClassify_CB8_RejectionIsAFailureWhateverItsCause checks that a
// refusal by an inner breaker is judged as a refusal, not as the
// failure that tripped that breaker: one tripped by a dependency's own
// context.Canceled is still a failure for an outer breaker, as every
// refusal was before refusals carried their cause.
func TestClassify_CB8_RejectionIsAFailureWhateverItsCause(t *testing.T) {
	inner := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	fail(t, inner, 1, context.Canceled) // the dependency's own cancellation
	rejection := openErr(t, inner)
	require.ErrorIs(t, rejection, context.Canceled)

	assert.Equal(t, rampart.Failure, circuitbreaker.Classify(rejection))
	assert.Equal(t, rampart.Failure, circuitbreaker.Classify(fmt.Errorf("wrapped: %w", rejection)))
	assert.Equal(t, rampart.Failure, circuitbreaker.ClassifyContext(t.Context(), rejection))

	outer := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	p, err := outer.TryAcquire()
	require.NoError(t, err)
	require.True(t, p.Done(rejection), "an inner rejection counts for the outer breaker")
	assert.Equal(t, rejection, openErr(t, outer).Cause)
}

// TestLayer_CB8_NestedBreakerCountsInnerRejection checks two stacked
// breaker layers: the outer one counts the inner one's refusal as a
// failure, and its own refusal reaches the dependency's failure through
// both causes.
func TestLayer_CB8_NestedBreakerCountsInnerRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := &statusError{code: 503}
		inner := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute})
		outer := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Minute})
		be := &backend{err: cause}
		svc := rampart.NewBuilder[string, string]().
			Layer(circuitbreaker.NewLayer[string, string](outer, nil)).
			Layer(circuitbreaker.NewLayer[string, string](inner, nil)).
			Service(be)

		_, err := svc.Call(t.Context(), "a") // trips inner
		require.Same(t, cause, err)
		_, err = svc.Call(t.Context(), "b") // inner rejects: trips outer
		var innerRejection *circuitbreaker.OpenError
		require.ErrorAs(t, err, &innerRejection)
		_, err = svc.Call(t.Context(), "c") // outer rejects
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Same(t, innerRejection, oe.Cause, "the outer breaker was tripped by the inner rejection")
		var se *statusError
		require.ErrorAs(t, err, &se)
		assert.Same(t, cause, se)
		assert.Equal(t, int64(1), be.calls.Load())
	})
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
