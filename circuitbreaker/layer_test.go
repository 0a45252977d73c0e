package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
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
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, ResetTimeout: time.Hour})
	svc := guard(b, rampart.ServiceFunc[string, string](panickingBackend))

	var (
		value any
		stack string
	)
	func() {
		defer func() {
			value = recover()
			stack = string(debug.Stack())
		}()
		_, _ = svc.Call(context.Background(), "x")
	}()
	assert.Equal(t, "backend exploded", value)
	assert.Contains(t, stack, "circuitbreaker_test.panickingBackend", "the original stack is kept")
	assert.Equal(t, circuitbreaker.Snapshot{
		State: circuitbreaker.Open, RetryAfter: time.Hour, Cause: circuitbreaker.ErrPanicked,
	}, b.State())
}

func TestLayer_CB7_PanicDuringProbeReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, ResetTimeout: time.Second})
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
		want circuitbreaker.Outcome
	}{
		{name: "nil", err: nil, want: circuitbreaker.Success},
		{name: "canceled", err: context.Canceled, want: circuitbreaker.Ignored},
		{name: "wrapped canceled", err: fmt.Errorf("call: %w", context.Canceled), want: circuitbreaker.Ignored},
		{name: "deadline", err: context.DeadlineExceeded, want: circuitbreaker.Failure},
		{name: "wrapped deadline", err: fmt.Errorf("call: %w", context.DeadlineExceeded), want: circuitbreaker.Failure},
		{name: "other", err: errBoom, want: circuitbreaker.Failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, circuitbreaker.Classify(tt.err))
		})
	}
	assert.Equal(t, "success failure ignored Outcome(9)", fmt.Sprint(circuitbreaker.Success, circuitbreaker.Failure, circuitbreaker.Ignored, circuitbreaker.Outcome(9)))
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
	assert.Equal(t, 1, b.State().Counters.ConsecutiveFailures, "not counted")
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
		assert.Equal(t, 1, b.State().Counters.ConsecutiveFailures, "the caller gave up: ignored")

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
		Policy:       circuitbreaker.Consecutive{Failures: 1},
		ResetTimeout: circuitbreaker.Immediate,
		IsFailure:    func(err error) bool { return !errors.Is(err, errNotFound) },
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
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, ResetTimeout: time.Hour})
	classify := func(r httpResp, err error) circuitbreaker.Outcome {
		if err == nil && r.status >= 500 {
			return circuitbreaker.Failure
		}
		return circuitbreaker.Classify(err)
	}
	calls := 0
	svc := rampart.NewBuilder[string, httpResp]().
		Layer(circuitbreaker.NewClassifiedLayer[string, httpResp](b, classify)).
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
	assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Hour}, b.State(), "a 503 has no error cause")
}

func TestLayer_ResultsPassThrough(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{})
	resp, err := guard(b, &backend{}).Call(context.Background(), "x")
	require.NoError(t, err)
	assert.Equal(t, "ok:x", resp)
}
