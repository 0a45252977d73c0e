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
	"github.com/rampart-go/rampart/internal/ctxcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
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

// The service a retry layer makes its first attempt with, right after
// checking the context itself: the same breaker, the same outcomes, only
// without the layer's own check of the context.
func TestLayer_CB8_UncheckedSkipsOnlyTheContextCheck(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
	be := &backend{err: errBoom}
	svc := guard(b, be)
	u := ctxcheck.Unchecked(svc)
	require.NotSame(t, svc, u)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := svc.Call(ctx, "x")
	assert.Equal(t, context.Canceled, err, "the layer itself still checks")
	assert.Equal(t, int64(0), be.calls.Load())
	_, err = u.Call(ctx, "x")
	assert.Same(t, errBoom, err, "the unchecked service makes the call")
	assert.Equal(t, int64(1), be.calls.Load())
	assert.Equal(t, 0, b.State().Counts.ConsecutiveFailures, "an error after the caller cancelled is ignored")

	for range 2 {
		_, err = u.Call(context.Background(), "x")
		assert.Same(t, errBoom, err)
	}
	assert.Equal(t, circuitbreaker.Open, b.State().State, "its failures trip the breaker the layer guards with")
	_, err = u.Call(context.Background(), "x")
	assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
	_, err = svc.Call(ctx, "x")
	assert.Equal(t, context.Canceled, err, "a done context first, also when Open")
	assert.Equal(t, int64(3), be.calls.Load(), "refused")
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

// IsFailure has the last word on errors in a classified layer too, and is
// never asked about a response the classifier judged a failure.
func TestClassifiedLayer_CB8_IsFailureOverrulesErrors(t *testing.T) {
	notFound := errors.New("not found")
	var asked []error
	b, err := circuitbreaker.New(circuitbreaker.Config{
		Policy: circuitbreaker.Consecutive{Failures: 2},
		IsFailure: func(err error) bool {
			asked = append(asked, err)
			return !errors.Is(err, notFound)
		},
	})
	require.NoError(t, err)
	// The response 503 is a failure; any error is one too.
	classify := func(resp int, err error) rampart.Outcome {
		if err != nil || resp == 503 {
			return rampart.Failure
		}
		return rampart.Success
	}
	var next struct {
		resp int
		err  error
	}
	svc := circuitbreaker.NewLayer[int, int](b, classify).Wrap(
		rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return next.resp, next.err }))

	next.err = notFound
	for range 3 {
		_, err := svc.Call(context.Background(), 0)
		require.ErrorIs(t, err, notFound)
	}
	assert.Equal(t, circuitbreaker.Closed, b.State().State)
	assert.Equal(t, []error{notFound, notFound, notFound}, asked)

	next.err, next.resp = nil, 503
	for range 2 {
		_, _ = svc.Call(context.Background(), 0)
	}
	assert.Len(t, asked, 3, "IsFailure is not asked about a nil error")
	assert.Equal(t, circuitbreaker.Open, b.State().State)
}

func TestClassifiedLayer_CB2_BadResponseIsTheCause(t *testing.T) {
	b, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	require.NoError(t, err)
	svc := circuitbreaker.NewLayer[int, int](b, func(resp int, err error) rampart.Outcome {
		if resp == 503 {
			return rampart.Failure
		}
		return rampart.Success
	}).Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 503, nil }))

	got, err := svc.Call(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, 503, got)
	_, err = svc.Call(context.Background(), 0)
	var oe *circuitbreaker.OpenError
	require.ErrorAs(t, err, &oe)
	assert.Same(t, circuitbreaker.ErrBadResponse, oe.Cause)
}

func TestLayer_NilBreakerFailsEachCallWithoutPanic(t *testing.T) {
	var called bool
	svc := circuitbreaker.NewLayer[int, int](nil, nil).Wrap(
		rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { called = true; return 1, nil }))
	_, err := svc.Call(context.Background(), 0)
	assert.EqualError(t, err, "circuitbreaker: layer built over a nil *Breaker (build one with circuitbreaker.New)")
	assert.False(t, called)
}

func TestLayer_CB8_DoneContextReturnsItsCause(t *testing.T) {
	errShutdown := errors.New("shutting down")
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}}})
	require.NoError(t, err)
	key := func(req string) string { return req }
	classify := func(string, error) rampart.Outcome { return rampart.Failure }
	inner := &backend{err: errBoom}
	group, err := wrap.Service3(rampart.Service[string, string](inner), circuitbreaker.NewGroupLayer, g, key, nil)
	require.NoError(t, err)
	classifiedGroup, err := wrap.Service3(rampart.Service[string, string](inner), circuitbreaker.NewGroupLayer, g, key, classify)
	require.NoError(t, err)
	calls := map[string]func(context.Context) error{
		"Run": func(ctx context.Context) error {
			_, err := circuitbreaker.Run(ctx, b, func(context.Context) (int, error) { inner.calls.Add(1); return 0, errBoom })
			return err
		},
		"NewLayer":                 serviceCall(guard(b, inner)),
		"NewLayer classified":      serviceCall(wrap.Layer(rampart.Service[string, string](inner), circuitbreaker.NewLayer, b, classify)),
		"NewGroupLayer":            serviceCall(group),
		"NewGroupLayer classified": serviceCall(classifiedGroup),
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			t.Run("with a cause", func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(context.Background())
				cancel(errShutdown)
				err := call(ctx)
				require.ErrorIs(t, err, context.Canceled)
				require.ErrorIs(t, err, errShutdown)
				assert.Equal(t, "context canceled: shutting down", err.Error())
			})
			t.Run("without a cause", func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				assert.Equal(t, context.Canceled, call(ctx), "the bare error when the cause is the error")
			})
		})
	}
	assert.Equal(t, int64(0), inner.calls.Load(), "nothing called")
	assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, b.State(), "nothing counted")
	assert.Empty(t, g.States(), "no breaker picked")
}

// serviceCall calls s with ctx and returns its error.
func serviceCall(s rampart.Service[string, string]) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := s.Call(ctx, "a")
		return err
	}
}

// panickingIsFailure is a Config.IsFailure that panics; its name must
// appear in the stack the caller sees.
func panickingIsFailure(error) bool { panic("judge exploded") }

// panickingClassifier is a Classifier that panics; its name must appear in
// the stack the caller sees.
func panickingClassifier(string, error) rampart.Outcome { panic("judge exploded") }

// TestLayer_CB7_PanickingJudgeIsFailureAndRepanics checks that a panic in
// Config.IsFailure or in a Classifier, whichever way the outcome reaches
// it, records the failure ErrPanicked and continues with its value and
// stack: in Closed it trips a breaker that trips on one failure, and
// during a HalfOpen probe it re-opens the breaker rather than keeping the
// probe slot until the lease ends.
func TestLayer_CB7_PanickingJudgeIsFailureAndRepanics(t *testing.T) {
	key := func(req string) string { return req }
	tests := []struct {
		name string
		// isFailure says whether the breaker's IsFailure panics (else the
		// classifier given to call does).
		isFailure bool
		// group says whether call uses a group (of breakers with the
		// test's Config) rather than one breaker.
		group bool
		// call makes one call through the breaker that g or b stands for:
		// exactly one of them is set.
		call func(t *testing.T, b *circuitbreaker.Breaker, g *circuitbreaker.Group[string])
	}{{
		name: "layer, IsFailure", isFailure: true,
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			_, _ = wrap.Layer(&backend{err: errBoom}, circuitbreaker.NewLayer, b, nil).Call(t.Context(), "x")
		},
	}, {
		name: "classified layer, Classifier on a response",
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			_, _ = circuitbreaker.NewLayer[string, string](b, panickingClassifier).Wrap(&backend{}).Call(t.Context(), "x")
		},
	}, {
		name: "classified layer, Classifier on an error",
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			_, _ = circuitbreaker.NewLayer[string, string](b, panickingClassifier).Wrap(&backend{err: errBoom}).Call(t.Context(), "x")
		},
	}, {
		name: "Run, IsFailure", isFailure: true,
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			_, _ = circuitbreaker.Run(t.Context(), b, func(context.Context) (int, error) { return 0, errBoom })
		},
	}, {
		name: "group layer, IsFailure", isFailure: true, group: true,
		call: func(t *testing.T, _ *circuitbreaker.Breaker, g *circuitbreaker.Group[string]) {
			l, err := circuitbreaker.NewGroupLayer[string, string](g, key, nil)
			require.NoError(t, err)
			_, _ = l.Wrap(&backend{err: errBoom}).Call(t.Context(), "x")
		},
	}, {
		name: "classified group layer, Classifier", group: true,
		call: func(t *testing.T, _ *circuitbreaker.Breaker, g *circuitbreaker.Group[string]) {
			l, err := circuitbreaker.NewGroupLayer[string, string](g, key, panickingClassifier)
			require.NoError(t, err)
			_, _ = l.Wrap(&backend{}).Call(t.Context(), "x")
		},
	}, {
		name: "Permit.Done, IsFailure", isFailure: true,
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			p.Done(errBoom)
		},
	}, {
		name: "Permit.DoneContext, IsFailure", isFailure: true,
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			p.DoneContext(t.Context(), errBoom)
		},
	}}
	for _, tt := range tests {
		for _, probe := range []bool{false, true} {
			name := tt.name + ", Closed"
			if probe {
				name = tt.name + ", HalfOpen probe"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second}
					if tt.isFailure {
						cfg.IsFailure = panickingIsFailure
					}
					var b *circuitbreaker.Breaker
					var g *circuitbreaker.Group[string]
					if tt.group {
						g = newGroup(t, circuitbreaker.GroupConfig{Breaker: cfg})
						b = g.Breaker("x")
					} else {
						b = newBreaker(t, cfg)
					}
					if probe {
						fail(t, b, 1, errBoom)
						time.Sleep(time.Second)
					}
					value, stack := panicOf(func() { tt.call(t, b, g) })
					assert.Equal(t, "judge exploded", value)
					if tt.isFailure {
						assert.Contains(t, stack, "circuitbreaker_test.panickingIsFailure", "the original stack is kept")
					} else {
						assert.Contains(t, stack, "circuitbreaker_test.panickingClassifier", "the original stack is kept")
					}
					want := circuitbreaker.Snapshot{
						State: circuitbreaker.Open, RetryAfter: time.Second, Cause: circuitbreaker.ErrPanicked,
					}
					if g != nil {
						want.Name = "x"
					}
					assert.Equal(t, want, b.State(), "the panic is a failure; no permit is left unfinished")
				})
			})
		}
	}
}

// Every call through the layers, Run and a group's layers is reported
// once, with the outcome the breaker was given: the counts by outcome are
// those of what the callers got.
func TestLayer_EV12_EveryCallReportedOnce(t *testing.T) {
	inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		switch req {
		case "down":
			return "", errBoom
		case "missing":
			return "", errNotFound
		case "bad":
			return "bad", nil
		case "panic":
			panic("boom")
		case "cancel": // the caller gives up during the call
			ctx.Value(cancelKey{}).(context.CancelFunc)()
			return "", ctx.Err()
		}
		return "ok", nil
	})
	classify := func(resp string, err error) rampart.Outcome {
		if resp == "bad" {
			return rampart.Failure
		}
		return circuitbreaker.ClassifyContext(context.Background(), err)
	}
	sw := &circuitbreaker.Switch{}
	cfg := func(obs *observetest.Counter) circuitbreaker.Config {
		return circuitbreaker.Config{
			Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1000}, CoolDown: time.Second, Observer: obs, Switch: sw,
			IsFailure: func(err error) bool { return !errors.Is(err, errNotFound) },
		}
	}
	paths := map[string]func(t *testing.T, obs *observetest.Counter) (rampart.Service[string, string], *circuitbreaker.Breaker){
		"NewLayer": func(t *testing.T, obs *observetest.Counter) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			b := newBreaker(t, cfg(obs))
			return wrap.Layer(inner, circuitbreaker.NewLayer, b, nil), b
		},
		"NewLayer classified": func(t *testing.T, obs *observetest.Counter) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			b := newBreaker(t, cfg(obs))
			return circuitbreaker.NewLayer[string, string](b, classify).Wrap(inner), b
		},
		"Run": func(t *testing.T, obs *observetest.Counter) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			b := newBreaker(t, cfg(obs))
			return rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
				return circuitbreaker.Run(ctx, b, func(ctx context.Context) (string, error) { return inner.Call(ctx, req) })
			}), b
		},
		"NewClassifiedGroupLayer": func(t *testing.T, obs *observetest.Counter) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: cfg(obs)})
			require.NoError(t, err)
			l, err := circuitbreaker.NewGroupLayer[string, string](g, func(string) string { return "tenant" }, classify)
			require.NoError(t, err)
			return l.Wrap(inner), g.Breaker("tenant")
		},
	}
	for name, build := range paths {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var obs observetest.Counter
				svc, _ := build(t, &obs)
				classified := name != "NewLayer" && name != "Run"
				got := newTally()
				call := func(ctx context.Context, req string) {
					defer func() {
						if recover() != nil {
							got["failure"]++ // a panic is a failure
						}
					}()
					resp, err := svc.Call(ctx, req)
					switch {
					case errors.Is(err, circuitbreaker.ErrOpen):
						got["rejected"]++
					case errors.Is(err, context.Canceled):
						got["ignored"]++
					case errors.Is(err, errNotFound):
						got["success"]++ // IsFailure: not a failure
					case err != nil:
						got["failure"]++
					case resp == "bad" && classified:
						got["failure"]++
					default:
						got["success"]++
					}
				}
				ctx := context.Background()
				canceled, cancel := context.WithCancel(ctx)
				for _, req := range []string{"ok", "ok", "down", "missing", "bad", "panic", "ok"} {
					call(ctx, req)
				}
				cancel()
				call(canceled, "ok") // done on arrival: not a call
				got["ignored"]--
				mid, cancelMid := context.WithCancel(ctx)
				call(context.WithValue(mid, cancelKey{}, cancelMid), "cancel") // ignored, not a failure
				sw.ForceOpen(errBoom)
				call(ctx, "ok")
				call(ctx, "down")
				sw.Release()
				require.Equal(t, 2, got["rejected"])
				require.Equal(t, map[string]int(got), obs.Outcomes())
			})
		})
	}
}

func TestLayer_EV12_CallOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		errDown := errors.New("down")
		b := newBreaker(t, circuitbreaker.Config{
			Name: "db", Policy: circuitbreaker.Consecutive{Failures: 2}, Observer: &rec,
			IsFailure: func(err error) bool { return !errors.Is(err, errNotFound) },
		})
		svc := wrap.Layer(rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			switch req {
			case "down":
				return "", errDown
			case "missing":
				return "", errNotFound
			case "slow":
				<-ctx.Done()
				return "", ctx.Err()
			}
			return "ok", nil
		}), circuitbreaker.NewLayer, b, nil)
		ctx := t.Context()
		_, _ = svc.Call(ctx, "ok")      // success: the fast path
		_, _ = svc.Call(ctx, "down")    // failure
		_, _ = svc.Call(ctx, "ok")      // success after a failure: recorded
		_, _ = svc.Call(ctx, "missing") // IsFailure: a success
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(time.Second, cancel)
		_, _ = svc.Call(cctx, "slow") // the caller gave up: ignored
		_, _ = svc.Call(ctx, "down")
		_, _ = svc.Call(ctx, "down") // trips
		_, errOpen := svc.Call(ctx, "ok")
		require.ErrorIs(t, errOpen, circuitbreaker.ErrOpen)

		ev := func(kind observe.Kind, err error) observe.Event {
			return observe.Event{Source: observe.Breaker, Name: "db", Kind: kind, Err: err}
		}
		require.Equal(t, []observe.Event{
			ev(observe.Success, nil),
			ev(observe.Failure, errDown),
			ev(observe.Success, nil),
			ev(observe.Success, nil),
			ev(observe.Ignored, context.Canceled),
			ev(observe.Failure, errDown),
			{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "closed", To: "open", Err: errDown, Calls: 2, Failures: 2, Duration: circuitbreaker.DefaultCoolDown},
			ev(observe.Failure, errDown),
			ev(observe.Rejected, errOpen),
		}, rec.Events())
	})
}

func TestLayer_EV12_DurationWhenThePolicyTimesCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		b := newBreaker(t, circuitbreaker.Config{Name: "db", Policy: circuitbreaker.SlowCalls{Threshold: time.Second}, Observer: &rec})
		errDown := errors.New("down")
		svc := wrap.Layer(rampart.ServiceFunc[time.Duration, string](func(_ context.Context, d time.Duration) (string, error) {
			time.Sleep(d)
			if d > time.Second {
				return "", errDown
			}
			return "ok", nil
		}), circuitbreaker.NewLayer, b, nil)
		_, _ = svc.Call(t.Context(), 300*time.Millisecond)
		_, _ = svc.Call(t.Context(), 2*time.Second)
		require.Equal(t, []observe.Event{
			{Source: observe.Breaker, Name: "db", Kind: observe.Success, Duration: 300 * time.Millisecond},
			{Source: observe.Breaker, Name: "db", Kind: observe.Failure, Duration: 2 * time.Second, Err: errDown},
		}, rec.Events())
	})
}

func TestLayer_EV12_ProbeDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		b := newBreaker(t, circuitbreaker.Config{
			Name:     "db",
			Policy:   circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 1}},
			CoolDown: time.Second,
			Observer: &rec,
		})
		svc := wrap.Layer(rampart.ServiceFunc[time.Duration, string](func(_ context.Context, d time.Duration) (string, error) {
			time.Sleep(d)
			return "ok", nil
		}), circuitbreaker.NewLayer, b, nil)
		_, _ = svc.Call(t.Context(), 2*time.Second) // slow: trips
		time.Sleep(time.Second)
		_, err := svc.Call(t.Context(), 300*time.Millisecond) // the probe
		require.NoError(t, err)
		var calls []observe.Event
		for _, e := range rec.Events() {
			if e.Kind != observe.Transition {
				calls = append(calls, e)
			}
		}
		require.Equal(t, []observe.Event{
			{Source: observe.Breaker, Name: "db", Kind: observe.Success, Duration: 2 * time.Second},
			{Source: observe.Breaker, Name: "db", Kind: observe.Success, Duration: 300 * time.Millisecond},
		}, calls)
		require.Equal(t, circuitbreaker.Closed, b.State().State)
	})
}

func TestLayer_EV12_PanicIsAFailure(t *testing.T) {
	var rec observetest.Recorder
	b := newBreaker(t, circuitbreaker.Config{Name: "db", Observer: &rec})
	svc := wrap.Layer(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { panic("boom") }), circuitbreaker.NewLayer, b, nil)
	require.Panics(t, func() { _, _ = svc.Call(context.Background(), "x") })
	require.Equal(t, []observe.Event{
		{Source: observe.Breaker, Name: "db", Kind: observe.Failure, Err: circuitbreaker.ErrPanicked},
	}, rec.Events())
}

// An observer costs the Closed success path no allocation (and, with
// nobody listening, nothing but a nil check: see the otel module's
// BenchmarkClosedSuccess).
func TestLayer_EV1_ObservedClosedSuccessAllocatesNothing(t *testing.T) {
	obs := observe.Func(func(context.Context, observe.Event) {})
	b := newBreaker(t, circuitbreaker.Config{Name: "db", Observer: obs})
	svc := wrap.Layer(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil }), circuitbreaker.NewLayer, b, nil)
	ctx := context.Background()
	require.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, "x") }))
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

// badResponse judges the response "bad" a failure.
func badResponse(resp string, err error) rampart.Outcome {
	if err != nil || resp == "ok:bad" {
		return rampart.Failure
	}
	return rampart.Success
}

// The Wrap twins guard svc as their layers do, with the type arguments
// inferred: a response the classifier judges bad trips a breaker that
// trips on one failure, and a group trips only the request's key.
func TestWrapTwins_CB4_CB18_GuardAsTheirLayers(t *testing.T) {
	cfg := circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}}
	key := func(req string) string { return req }
	tests := []struct {
		name string
		// wrap returns the wrapped backend and the breaker that guards
		// the request "bad".
		wrap func(t *testing.T) (rampart.Service[string, string], *circuitbreaker.Breaker)
	}{{
		name: "NewLayer",
		wrap: func(t *testing.T) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			b := newBreaker(t, cfg)
			return wrap.Layer(&backend{}, circuitbreaker.NewLayer, b, badResponse), b
		},
	}, {
		name: "NewGroupLayer",
		wrap: func(t *testing.T) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			g := newGroup(t, circuitbreaker.GroupConfig{Breaker: cfg})
			svc, err := wrap.Service3(&backend{}, circuitbreaker.NewGroupLayer, g, key, badResponse)
			require.NoError(t, err)
			return svc, g.Breaker("bad")
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, b := tt.wrap(t)
			resp, err := svc.Call(t.Context(), "bad")
			require.NoError(t, err)
			assert.Equal(t, "ok:bad", resp)
			assert.Equal(t, circuitbreaker.Open, b.State().State)
			_, err = svc.Call(t.Context(), "bad")
			var oe *circuitbreaker.OpenError
			require.ErrorAs(t, err, &oe)
			assert.Same(t, circuitbreaker.ErrBadResponse, oe.Cause, "tripped by the bad response")
		})
	}

	t.Run("NewGroupLayer unclassified", func(t *testing.T) {
		g := newGroup(t, circuitbreaker.GroupConfig{Breaker: cfg})
		svc, err := wrap.Service3(&backend{err: errBoom}, circuitbreaker.NewGroupLayer, g, key, nil)
		require.NoError(t, err)
		_, err = svc.Call(t.Context(), "a")
		assert.Same(t, errBoom, err)
		_, err = svc.Call(t.Context(), "a")
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "a", oe.Name, "a's own breaker")
		assert.Same(t, errBoom, oe.Cause)
		_, err = svc.Call(t.Context(), "b")
		assert.Same(t, errBoom, err, "b has its own breaker")
	})
}

// The layer constructors name a nil argument, and a layer's Wrap of a nil
// service fails every call with an error matching rampart.ErrNilService.
func TestLayers_CB15_NilArguments(t *testing.T) {
	var g circuitbreaker.Group[string]
	key := func(req string) string { return req }
	_, err := circuitbreaker.NewGroupLayer[string, string, string](nil, key, nil)
	assert.EqualError(t, err, "circuitbreaker: group layer: nil *Group (build one with circuitbreaker.NewGroup)")
	_, err = circuitbreaker.NewGroupLayer[string, string, string](&g, nil, nil)
	assert.EqualError(t, err, "circuitbreaker: group layer: nil key func")
	l, err := circuitbreaker.NewGroupLayer[string, string](&g, key, nil)
	require.NoError(t, err)
	_, err = l.Wrap(nil).Call(t.Context(), "a")
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "circuitbreaker: group layer Wrap: rampart: nil service")
	_, err = circuitbreaker.NewLayer[string, string](&circuitbreaker.Breaker{}, nil).Wrap(nil).Call(t.Context(), "a")
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "circuitbreaker: Wrap: rampart: nil service")
}

// TestLayer_CB15_NilInnerServiceFailsEachCall checks that a breaker layer's
// Wrap of a nil service, or of a nil ServiceFunc, returns a service that
// fails every call with an error matching rampart.ErrNilService, without
// panicking and without counting anything against the breaker.
func TestLayer_CB15_NilInnerServiceFailsEachCall(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	layers := map[string]rampart.Layer[string, string]{
		"NewLayer":            circuitbreaker.NewLayer[string, string](b, nil),
		"NewLayer classified": circuitbreaker.NewLayer[string, string](b, func(string, error) rampart.Outcome { return rampart.Failure }),
	}
	for name, l := range layers {
		for inner, svc := range map[string]rampart.Service[string, string]{
			"nil":             l.Wrap(nil),
			"nil ServiceFunc": l.Wrap(rampart.ServiceFunc[string, string](nil)),
		} {
			t.Run(name+"/"+inner, func(t *testing.T) {
				for range 2 {
					resp, err := svc.Call(t.Context(), "a")
					require.ErrorIs(t, err, rampart.ErrNilService)
					assert.Equal(t, "circuitbreaker: Wrap: rampart: nil service", err.Error())
					assert.Empty(t, resp)
				}
				assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, b.State(), "nothing was counted")
			})
		}
	}
}

// TestLayer_CB15_NilBreakerFailsEachCall checks that a layer over a nil
// *Breaker fails every call with an error saying so, and calls nothing.
func TestLayer_CB15_NilBreakerFailsEachCall(t *testing.T) {
	be := &backend{}
	for name, l := range map[string]rampart.Layer[string, string]{
		"NewLayer":            circuitbreaker.NewLayer[string, string](nil, nil),
		"NewLayer classified": circuitbreaker.NewLayer[string, string](nil, func(string, error) rampart.Outcome { return rampart.Failure }),
	} {
		t.Run(name, func(t *testing.T) {
			for _, svc := range []rampart.Service[string, string]{l.Wrap(be), l.Wrap(nil)} {
				_, err := svc.Call(context.Background(), "a")
				require.EqualError(t, err, "circuitbreaker: layer built over a nil *Breaker (build one with circuitbreaker.New)")
			}
		})
	}
	assert.Zero(t, be.calls.Load())
}

// Through the layer too, Closed calls allocate nothing with any built-in
// policy: the untimed path Call takes itself and the timed one it leaves
// to call (SlowCalls), for successes and failures alike.
func TestLayer_AllocsClosedEveryPolicy(t *testing.T) {
	for _, tt := range benchPolicies {
		t.Run(tt.name, func(t *testing.T) {
			b := newBreaker(t, circuitbreaker.Config{Policy: tt.policy})
			calls := 0
			svc := circuitbreaker.NewLayer[int, int](b, nil).Wrap(rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) {
				if calls++; calls%10 == 0 {
					return 0, errBoom
				}
				return req, nil
			}))
			ctx := context.Background()
			allocs := testing.AllocsPerRun(1000, func() {
				for range 10 {
					_, _ = svc.Call(ctx, 1)
				}
			})
			assert.Zero(t, allocs)
			assert.Equal(t, circuitbreaker.Closed, b.State().State)
			assert.Equal(t, 10010, calls)
		})
	}
}
