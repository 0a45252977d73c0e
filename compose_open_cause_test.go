package rampart_test

// End-to-end tests of a breaker refusal that carries its cause in the
// error chain (CB2): what the caller sees through a whole stack, and how
// the layers that classify errors with errors.Is / errors.As treat a
// refusal whose cause would, on its own, mean something else to them.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/fallback"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/ratelimit"
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
		Policy:   circuitbreaker.Consecutive{Failures: 2},
		CoolDown: time.Minute,
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
	return b.Layer(circuitbreaker.NewLayer[string, string](br, nil)).Service(backend), br
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
		assert.Equal(t, time.Minute-10*time.Millisecond, oe.RetryAfter())
		assert.Equal(t, "circuitbreaker: open (retry after 59.99s): tripped by: backend: status 500", err.Error())
	})
}

// TestCompose_RT3_RejectionWithDeadlineCauseAtCallersDeadline: a breaker
// tripped by timeouts refuses an attempt just as the caller's deadline
// passes. The refusal's chain now matches context.DeadlineExceeded, the
// caller's ctx.Err(); the retry loop must still return the *OpenError
// itself (RT3), not mistake the refusal for the caller's own expiry and
// report the attempt before it inside an *ExhaustedError.
//
// Fails until retry's loop asks errors.Is(err, circuitbreaker.ErrOpen)
// before its "the attempt only reports the caller's cancellation" check.
func TestCompose_RT3_RejectionWithDeadlineCauseAtCallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		attemptTimedOut := &timeout.Error{After: time.Second, Err: context.DeadlineExceeded}
		backend := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			return "", attemptTimedOut
		})
		// slow stands for any layer between the loop and the breaker that
		// returns the refusal at the instant the caller's deadline
		// passes: it holds a refusal until then.
		slow := rampart.LayerFunc[string, string](func(inner rampart.Service[string, string]) rampart.Service[string, string] {
			return rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
				resp, err := inner.Call(ctx, req)
				if _, isOpen := err.(*circuitbreaker.OpenError); isOpen {
					<-ctx.Done()
				}
				return resp, err
			})
		})
		svc, br := causeStack(t, slow, backend)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()

		_, err := svc.Call(ctx, "req")
		require.Equal(t, circuitbreaker.Open, br.State().State)
		require.ErrorIs(t, err, circuitbreaker.ErrOpen)
		_, isOpen := err.(*circuitbreaker.OpenError)
		assert.True(t, isOpen, "an open breaker ends the loop as it is, not wrapped: %v", err)
	})
}

// TestCompose_CB2_HandlerAnswersOpenBreakerWith503: a server stack with a
// breaker outside a rate limiter in Refuse mode, whose refusals trip the
// breaker. The breaker's refusal then carries a *ratelimit.LimitedError;
// the Handler must still answer it as an open breaker (503 with the
// breaker's Retry-After), not as a rate-limit refusal (429).
//
// Fails until ramparthttp's status mapping asks
// errors.Is(err, circuitbreaker.ErrOpen) before ratelimit.ErrLimited.
func TestCompose_CB2_HandlerAnswersOpenBreakerWith503(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 1},
		CoolDown: rampart.Forever,
	})
	require.NoError(t, err)
	limited := rampart.LayerFunc[ramparthttp.Exchange, struct{}](func(rampart.Service[ramparthttp.Exchange, struct{}]) rampart.Service[ramparthttp.Exchange, struct{}] {
		return rampart.ServiceFunc[ramparthttp.Exchange, struct{}](func(context.Context, ramparthttp.Exchange) (struct{}, error) {
			return struct{}{}, &ratelimit.LimitedError{Wait: 2 * time.Second}
		})
	})
	h, err := ramparthttp.NewHandler(http.NotFoundHandler(), ramparthttp.ServerConfig{
		Layers:     []ramparthttp.ServerLayer{circuitbreaker.NewLayer[ramparthttp.Exchange, struct{}](br, nil), limited},
		RetryAfter: 7 * time.Second,
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	get := func() (int, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL)
		require.NoError(t, err)
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	code, after := get()
	assert.Equal(t, http.StatusTooManyRequests, code, "the limiter's own refusal")
	assert.Equal(t, "2", after)
	require.Equal(t, circuitbreaker.Open, br.State().State)

	code, after = get()
	assert.Equal(t, http.StatusServiceUnavailable, code, "an open breaker, whatever tripped it")
	assert.Empty(t, after, "a breaker open until reset advertises no Retry-After")
}

// TestCompose_CB2_TimeoutOutsideBreakerPassesRejectionOn: a timeout layer
// outside a breaker tripped by timeouts judges the refusal by the clock,
// not by its chain (which matches context.DeadlineExceeded and
// timeout.ErrTimeout): a refusal before the deadline is returned as it
// is, not turned into the outer layer's timeout.
func TestCompose_CB2_TimeoutOutsideBreakerPassesRejectionOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		require.NoError(t, err)
		perAttempt, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: time.Second})
		require.NoError(t, err)
		total, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: 5 * time.Second})
		require.NoError(t, err)
		hang := rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})
		svc := rampart.NewBuilder[string, string]().
			Layer(total).
			Layer(circuitbreaker.NewLayer[string, string](br, nil)).
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
// open-breaker refusals (When: errors.Is(err, ErrOpen)) still sees the
// backend's failure itself, the first time, and the refusal after; and
// its When can tell the two apart although the refusal's chain holds the
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
		Layer(circuitbreaker.NewLayer[string, string](br, nil)).
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
