package rampart_test

// End-to-end tests of a breaker rejection that carries its cause in the
// error chain (CB2): what the caller sees through a whole stack, and how
// the layers that classify errors with errors.Is / errors.As treat a
// rejection whose cause would, on its own, mean something else to them.

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/fallback"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// statusError is a backend's own error type.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("backend: status %d", e.code) }

// causeStack is retry (3 attempts, 10ms apart) -> mid -> breaker (trips
// after 2 consecutive failures, cools down for a minute) -> backend, where
// mid (nil for none) sits between the retry loop and the breaker.
func causeStack(t *testing.T, mid rampart.Layer[string, string], backend rampart.Service[string, string]) (rampart.Service[string, string], *circuitbreaker.Breaker) {
	t.Helper()
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:       circuitbreaker.Consecutive{Failures: 2},
		ResetTimeout: time.Minute,
	})
	require.NoError(t, err)
	backoff, err := retry.NewConstant(10 * time.Millisecond)
	require.NoError(t, err)
	retrying, err := retry.NewLayer[string, string](retry.Config[string, string]{MaxAttempts: 3, Backoff: backoff})
	require.NoError(t, err)
	b := rampart.NewBuilder[string, string]().Layer(retrying)
	if mid != nil {
		b = b.Layer(mid)
	}
	return b.Layer(circuitbreaker.NewLayer[string, string](br)).Service(backend), br
}

// TestCompose_CB2_RT3_RetryEndsAtOpenBreakerWithItsCause: a client whose
// retries end at an open breaker gets the *OpenError itself, and through
// it the backend's real failure.
func TestCompose_CB2_RT3_RetryEndsAtOpenBreakerWithItsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		backend := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			calls++
			return "", &statusError{code: 500}
		})
		svc, _ := causeStack(t, nil, backend)

		start := time.Now()
		_, err := svc.Call(t.Context(), "req")
		assert.Equal(t, 20*time.Millisecond, time.Since(start))
		assert.Equal(t, 2, calls, "the third attempt is rejected")

		oe, isOpen := err.(*circuitbreaker.OpenError)
		require.True(t, isOpen, "the rejection itself, not an exhaustion: %v", err)
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
		var ex *retry.ExhaustedError
		assert.NotErrorAs(t, err, &ex)
		var se *statusError
		require.ErrorAs(t, err, &se, "the backend's failure is in the chain")
		assert.Equal(t, 500, se.code)
		assert.ErrorIs(t, err, oe.Cause)
		assert.Same(t, se, oe.Cause)
		assert.Equal(t, time.Minute-10*time.Millisecond, oe.RetryAfter)
		assert.Equal(t, "circuitbreaker: open (retry after 59.99s): tripped by: backend: status 500", err.Error())
	})
}

// TestCompose_CB2_TimeoutOutsideBreakerPassesRejectionOn: a timeout layer
// outside a breaker tripped by timeouts judges the rejection by the clock,
// not by its chain (which matches context.DeadlineExceeded and
// timeout.ErrTimeout): a rejection before the deadline is returned as it
// is, not turned into the outer layer's timeout.
func TestCompose_CB2_TimeoutOutsideBreakerPassesRejectionOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		require.NoError(t, err)
		perAttempt, err := timeout.NewLayer[string, string](time.Second)
		require.NoError(t, err)
		total, err := timeout.NewLayer[string, string](5 * time.Second)
		require.NoError(t, err)
		hang := rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})
		svc := rampart.NewBuilder[string, string]().
			Layer(total).
			Layer(circuitbreaker.NewLayer[string, string](br)).
			Layer(perAttempt).
			Service(hang)

		_, err = svc.Call(t.Context(), "a")
		var te *timeout.Error
		require.ErrorAs(t, err, &te)
		assert.Equal(t, time.Second, te.After, "the per-attempt timeout tripped the breaker")

		_, err = svc.Call(t.Context(), "b")
		oe, isOpen := err.(*circuitbreaker.OpenError)
		require.True(t, isOpen, "the rejection as it is: %v", err)
		assert.Same(t, te, oe.Cause)
		assert.ErrorIs(t, err, timeout.ErrTimeout, "a rejection matches what its cause matches")
	})
}

// TestCompose_CB2_FallbackOnOpenBreakerOnly: a fallback that answers only
// open-breaker rejections (When: errors.Is(err, ErrOpen)) still sees the
// backend's failure itself, the first time, and the rejection after; and
// its When can tell the two apart although the rejection's chain holds the
// failure.
func TestCompose_CB2_FallbackOnOpenBreakerOnly(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	require.NoError(t, err)
	fb, err := fallback.NewLayer(fallback.Config[string, string]{
		Fallback: func(_ context.Context, _ string, err error) (string, error) {
			var se *statusError
			if !assert.ErrorAs(t, err, &se) {
				return "", err
			}
			return fmt.Sprintf("cached (backend said %d)", se.code), nil
		},
		When: func(err error) bool {
			_, isOpen := err.(*circuitbreaker.OpenError)
			return isOpen
		},
	})
	require.NoError(t, err)
	svc := rampart.NewBuilder[string, string]().
		Layer(fb).
		Layer(circuitbreaker.NewLayer[string, string](br)).
		Service(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			return "", &statusError{code: 502}
		}))

	_, err = svc.Call(t.Context(), "a")
	var se *statusError
	require.ErrorAs(t, err, &se, "the failure itself is not answered by the fallback")
	resp, err := svc.Call(t.Context(), "b")
	require.NoError(t, err)
	assert.Equal(t, "cached (backend said 502)", resp)
}
