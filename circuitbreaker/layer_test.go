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
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
)

// panickingBackend panics; its name must appear in the stack the caller
// sees, which it would not if the layer recovered and re-panicked.
func panickingBackend(context.Context, string) (string, error) {
	panic("backend exploded")
}

func TestLayer_CB7_PanicIsFailureAndRepanics(t *testing.T) {
	synctest.Test(t, testPanicIsFailure)
}

func testPanicIsFailure(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
	svc := guard(b, rampart.ServiceFunc[string, string](panickingBackend))

	value, stack := panicOf(func() { _, _ = svc.Call(context.Background(), "x") })
	assert.Equal(t, "backend exploded", value)
	assert.Contains(t, stack, "circuitbreaker_test.panickingBackend", "the original stack is kept")
	assert.Equal(t, circuitbreaker.Snapshot{
		State: circuitbreaker.Open, RetryAfter: time.Hour, Cause: circuitbreaker.ErrPanicked,
	}, b.State())
}

func TestLayer_CB7_PanicDuringProbeReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second})
		fail(t, b, 1, errBoom)
		time.Sleep(time.Second)
		svc := guard(b, rampart.ServiceFunc[string, string](panickingBackend))
		assert.PanicsWithValue(t, "backend exploded", func() { _, _ = svc.Call(t.Context(), "x") })
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.Open, RetryAfter: time.Second, Cause: circuitbreaker.ErrPanicked,
		}, b.State(), "the probe's panic re-opened the breaker, no slot is leaked")
	})
}

func TestClassify_CB8_Defaults(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want rampart.Outcome
	}{
		{name: "nil", err: nil, want: rampart.Success},
		{name: "canceled", err: context.Canceled, want: rampart.Ignored},
		{name: "wrapped canceled", err: fmt.Errorf("call: %w", context.Canceled), want: rampart.Ignored},
		{name: "deadline", err: context.DeadlineExceeded, want: rampart.Failure},
		{name: "wrapped deadline", err: fmt.Errorf("call: %w", context.DeadlineExceeded), want: rampart.Failure},
		{name: "other", err: errBoom, want: rampart.Failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, circuitbreaker.Classify(tt.err))
		})
	}
	assert.Equal(t, "success failure ignored Outcome(9)", fmt.Sprint(rampart.Success, rampart.Failure, rampart.Ignored, rampart.Outcome(9)))
}

func TestLayer_CB8_DoneContextNotCalledNotCounted(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
	be := &backend{err: errBoom}
	svc := guard(b, be)
	fail(t, b, 1, errBoom)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := svc.Call(ctx, "x")
	assert.Equal(t, context.Canceled, err)
	dctx, dcancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer dcancel()
	_, err = svc.Call(dctx, "x")
	assert.Equal(t, context.DeadlineExceeded, err)

	assert.Equal(t, int64(0), be.calls.Load(), "not made")
	assert.Equal(t, 1, b.State().Counts.ConsecutiveFailures, "not counted")
}

func TestLayer_CB8_CancelIgnoredDeadlineFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
		// The backend waits for its context: the caller decides how it ends.
		slow := rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})
		svc := guard(b, slow)
		fail(t, b, 1, errBoom)

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		_, err := svc.Call(ctx, "x")
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, b.State().Counts.ConsecutiveFailures, "the caller gave up: ignored")

		dctx, dcancel := context.WithTimeout(t.Context(), time.Second)
		defer dcancel()
		_, err = svc.Call(dctx, "x")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, circuitbreaker.Open, b.State().State, "an expired deadline is a failure")
	})
}

func TestLayer_CB8_IsFailurePredicate(t *testing.T) {
	// The seed's registry example: "package not found" reaches the caller but
	// does not indicate an unavailable dependency, also while probing.
	b := newBreaker(t, circuitbreaker.Config{
		Policy:    circuitbreaker.Consecutive{Failures: 1},
		CoolDown:  circuitbreaker.Immediate,
		IsFailure: func(err error) bool { return !errors.Is(err, errNotFound) },
	})
	_, err := guard(b, &backend{err: errBoom}).Call(context.Background(), "x")
	require.ErrorIs(t, err, errBoom)
	assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)

	_, err = guard(b, &backend{err: errNotFound}).Call(context.Background(), "x")
	require.ErrorIs(t, err, errNotFound, "the error reaches the caller")
	assert.Equal(t, circuitbreaker.Closed, b.State().State, "and counts as a success toward closing")

	_, err = guard(b, &backend{err: errNotFound}).Call(context.Background(), "x")
	require.ErrorIs(t, err, errNotFound)
	assert.Equal(t, circuitbreaker.Closed, b.State().State, "never trips in Closed")
}

type httpResp struct{ status int }

func TestLayer_CB8_ResponseClassifier(t *testing.T) {
	synctest.Test(t, testResponseClassifier)
}

func testResponseClassifier(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Hour})
	classify := func(r httpResp, err error) rampart.Outcome {
		if err == nil && r.status >= 500 {
			return rampart.Failure
		}
		return circuitbreaker.Classify(err)
	}
	calls := 0
	svc := rampart.NewBuilder[string, httpResp]().
		Layer(circuitbreaker.NewLayer[string, httpResp](b, classify)).
		Service(rampart.ServiceFunc[string, httpResp](func(context.Context, string) (httpResp, error) {
			calls++
			return httpResp{status: 503}, nil
		}))
	for range 2 {
		resp, err := svc.Call(context.Background(), "x")
		require.NoError(t, err)
		assert.Equal(t, 503, resp.status, "the response reaches the caller")
	}
	_, err := svc.Call(context.Background(), "x")
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	assert.Equal(t, 2, calls)
	assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Hour, Cause: circuitbreaker.ErrBadResponse}, b.State(), "a 503 has no error: the cause says a response was judged a failure")
}

func TestLayer_ResultsPassThrough(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{})
	resp, err := guard(b, &backend{}).Call(context.Background(), "x")
	require.NoError(t, err)
	assert.Equal(t, "ok:x", resp)
}

// errAttemptTimedOut matches both context errors, as a retry exhaustion
// does whose last attempt timed out and whose caller then cancelled.
var errAttemptTimedOut = errors.Join(fmt.Errorf("attempt: %w", context.DeadlineExceeded), context.Canceled)

func TestClassifyContext_CB8_Defaults(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancelExpired()
	depCanceled := fmt.Errorf("stream reset: %w", context.Canceled)
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want rampart.Outcome
	}{
		{name: "live nil", ctx: live, err: nil, want: rampart.Success},
		{name: "live dependency canceled", ctx: live, err: depCanceled, want: rampart.Failure},
		{name: "live deadline", ctx: live, err: context.DeadlineExceeded, want: rampart.Failure},
		{name: "live other", ctx: live, err: errBoom, want: rampart.Failure},
		{name: "cancelled nil", ctx: cancelled, err: nil, want: rampart.Success},
		{name: "cancelled canceled", ctx: cancelled, err: context.Canceled, want: rampart.Ignored},
		{name: "cancelled timed-out attempt", ctx: cancelled, err: errAttemptTimedOut, want: rampart.Ignored},
		{name: "cancelled other", ctx: cancelled, err: errBoom, want: rampart.Ignored},
		{name: "expired nil", ctx: expired, err: nil, want: rampart.Success},
		{name: "expired deadline", ctx: expired, err: context.DeadlineExceeded, want: rampart.Failure},
		{name: "expired canceled", ctx: expired, err: depCanceled, want: rampart.Failure},
		{name: "expired other", ctx: expired, err: errBoom, want: rampart.Failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, circuitbreaker.ClassifyContext(tt.ctx, tt.err))
		})
	}
	// Without the context, the same errors are judged from their chain.
	assert.Equal(t, rampart.Ignored, circuitbreaker.Classify(depCanceled))
	assert.Equal(t, rampart.Failure, circuitbreaker.Classify(errAttemptTimedOut))
	//lint:ignore SA1012 a nil context must not panic
	assert.Equal(t, rampart.Ignored, circuitbreaker.ClassifyContext(nil, depCanceled), "a nil context: as Classify")
}

// returning is a backend that returns err; when cancel is set, it first
// cancels the caller's context, as a caller who gives up while the call
// runs.
func returning(cancel context.CancelFunc, err error) rampart.Service[string, string] {
	return rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		if cancel != nil {
			cancel()
		}
		return "", err
	})
}

func TestLayer_CB8_DependencyCancellationIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Minute})
		reset := fmt.Errorf("stream reset: %w", context.Canceled)
		svc := guard(b, returning(nil, reset))

		_, err := svc.Call(t.Context(), "x")
		assert.Same(t, reset, err, "the error reaches the caller unchanged")
		assert.Equal(t, 1, b.State().Counts.ConsecutiveFailures, "the caller's context is live: the dependency failed")
		_, err = svc.Call(t.Context(), "x")
		assert.Same(t, reset, err)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Minute, Cause: reset}, b.State())
	})
}

func TestLayer_CB8_DependencyCancellationFailsAProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second})
		fail(t, b, 1, errBoom)
		time.Sleep(time.Second)
		reset := fmt.Errorf("stream reset: %w", context.Canceled)
		_, err := guard(b, returning(nil, reset)).Call(t.Context(), "x")
		assert.Same(t, reset, err)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Second, Cause: reset}, b.State(),
			"the probe failed and re-opened the breaker")
	})
}

func TestLayer_CB8_CallerCancellationIsIgnoredWhateverTheError(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
	}{
		{name: "canceled", err: context.Canceled},
		{name: "plain error", err: errBoom},
		{name: "timed-out attempt", err: errAttemptTimedOut},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
			fail(t, b, 1, errBoom)
			ctx, cancel := context.WithCancel(t.Context())
			_, err := guard(b, returning(cancel, tt.err)).Call(ctx, "x")
			assert.Same(t, tt.err, err)
			assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{ConsecutiveFailures: 1}}, b.State(),
				"the caller gave up: not counted")
		})
	}
}

func TestLayer_CB8_CallerCancellationFreesAProbeSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second})
		fail(t, b, 1, errBoom)
		time.Sleep(time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		_, err := guard(b, returning(cancel, errAttemptTimedOut)).Call(ctx, "x")
		assert.Same(t, errAttemptTimedOut, err)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom}, b.State(),
			"no verdict, and the slot is free")
	})
}

func TestLayer_CB8_SuccessAfterCallerCancellationCounts(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
	fail(t, b, 1, errBoom)
	ctx, cancel := context.WithCancel(t.Context())
	_, err := guard(b, returning(cancel, nil)).Call(ctx, "x")
	require.NoError(t, err)
	assert.Equal(t, 0, b.State().Counts.ConsecutiveFailures, "the dependency answered: a success resets the run")
}

func TestLayer_CB8_ExpiredDeadlineIsAFailureWhateverTheError(t *testing.T) {
	for _, tt := range []struct {
		name string
		// call runs the backend under ctx and returns its error.
		call func(ctx context.Context) error
		// want is the error the caller gets, after took.
		want string
		took time.Duration
	}{
		{
			// The caller's deadline passes while the dependency works; the
			// dependency's client reports it as a cancellation of its own.
			name: "caller's deadline",
			call: func(ctx context.Context) error {
				<-ctx.Done()
				return fmt.Errorf("request aborted: %w", context.Canceled)
			},
			want: "request aborted: context canceled",
			took: 2 * time.Second,
		},
		{
			// A timeout layer inside the breaker: its deadline, not the
			// caller's, expires.
			name: "inner timeout",
			call: func(ctx context.Context) error {
				ctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				<-ctx.Done()
				return ctx.Err()
			},
			want: "context deadline exceeded",
			took: time.Second,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
				fail(t, b, 1, errBoom)
				svc := guard(b, rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
					return "", tt.call(ctx)
				}))
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				defer cancel()
				start := time.Now()
				_, err := svc.Call(ctx, "x")
				assert.EqualError(t, err, tt.want, "the inner error, unchanged")
				assert.Equal(t, tt.took, time.Since(start))
				assert.Equal(t, circuitbreaker.Open, b.State().State, "the dependency did not answer in time: a failure")
			})
		})
	}
}

func TestPermit_CB8_DoneContext(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{
		Policy:    circuitbreaker.Consecutive{Failures: 5},
		IsFailure: func(err error) bool { return !errors.Is(err, errNotFound) },
	})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	done := func(ctx context.Context, err error) bool {
		p, aerr := b.TryAcquire()
		require.NoError(t, aerr)
		return p.DoneContext(ctx, err)
	}
	assert.True(t, done(t.Context(), context.Canceled), "the dependency's cancellation counts")
	assert.True(t, done(t.Context(), errBoom))
	assert.Equal(t, 2, b.State().Counts.ConsecutiveFailures)
	assert.False(t, done(cancelled, errBoom), "the caller's cancellation is ignored")
	assert.Equal(t, 2, b.State().Counts.ConsecutiveFailures)
	assert.True(t, done(t.Context(), errNotFound), "IsFailure turns it into a success")
	assert.Equal(t, 0, b.State().Counts.ConsecutiveFailures)

	var zero circuitbreaker.Permit
	assert.False(t, zero.DoneContext(t.Context(), errBoom), "the zero Permit is finished already")
}

func TestLayer_CB8_ClassifiedLayerIgnoresCallerCancellationFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second})
		fail(t, b, 1, errBoom)
		time.Sleep(time.Second)
		asked := 0
		classify := func(r httpResp, err error) rampart.Outcome {
			asked++
			if err != nil || r.status >= 500 {
				return rampart.Failure
			}
			return rampart.Success
		}
		stack := func(status int, err error, cancel context.CancelFunc) rampart.Service[string, httpResp] {
			return rampart.NewBuilder[string, httpResp]().
				Layer(circuitbreaker.NewLayer[string, httpResp](b, classify)).
				Service(rampart.ServiceFunc[string, httpResp](func(context.Context, string) (httpResp, error) {
					cancel()
					return httpResp{status: status}, err
				}))
		}

		ctx, cancel := context.WithCancel(t.Context())
		_, err := stack(0, errBoom, cancel).Call(ctx, "x")
		assert.Same(t, errBoom, err)
		assert.Equal(t, 0, asked, "the caller gave up: the classifier is not asked")
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom}, b.State(), "the probe slot is free")

		ctx, cancel = context.WithCancel(t.Context())
		resp, err := stack(200, nil, cancel).Call(ctx, "x")
		require.NoError(t, err)
		assert.Equal(t, 200, resp.status)
		assert.Equal(t, 1, asked, "a response is judged even though the caller cancelled")
		assert.Equal(t, circuitbreaker.Closed, b.State().State, "the probe succeeded")
	})
}

func TestWrap_CB4_InfersTypesAndSharesTheBreaker(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
	calls := 0
	svc := wrap.Layer(rampart.ServiceFunc[string, int](func(context.Context, string) (int, error) {
		calls++
		return 0, errBoom
	}), circuitbreaker.NewLayer, b, nil)
	_, err := svc.Call(t.Context(), "x")
	require.ErrorIs(t, err, errBoom)
	_, err = svc.Call(t.Context(), "x")
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	assert.Equal(t, 1, calls, "the open breaker made no call")
	assert.Equal(t, circuitbreaker.Open, b.State().State)

	_, err = circuitbreaker.NewLayer[string, int](b, nil).Wrap(nil).Call(t.Context(), "x")
	assert.ErrorIs(t, err, rampart.ErrNilService)
	_, err = wrap.Layer(rampart.ServiceFunc[string, int](func(context.Context, string) (int, error) { return 1, nil }), circuitbreaker.NewLayer, nil, nil).Call(t.Context(), "x")
	assert.ErrorContains(t, err, "nil *Breaker")
}

// An Open breaker's rejection through the layer: the period's OpenError,
// reported once as rejected; a call whose context is already done gets the
// context's error instead and is neither made nor reported.
func TestLayer_CB8_OpenRejectsUnlessDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var obs observetest.Counter
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute, Observer: &obs})
		be := &backend{err: errBoom}
		svc := guard(b, be)
		_, err := svc.Call(context.Background(), "x")
		require.ErrorIs(t, err, errBoom)
		want := openErr(t, b)

		for range 3 {
			_, err = svc.Call(context.Background(), "x")
			assert.Same(t, want, err, "the period's prebuilt rejection")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = svc.Call(ctx, "x")
		assert.Equal(t, context.Canceled, err)

		assert.Equal(t, int64(1), be.calls.Load(), "only the call that tripped it was made")
		// openErr took its rejection from TryAcquire: 1 + 3 rejected.
		assert.Equal(t, map[string]int{"success": 0, "failure": 1, "ignored": 0, "rejected": 4}, obs.Outcomes())
	})
}
