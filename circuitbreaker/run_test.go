package circuitbreaker_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

func TestRun_CB16_ResultAndErrorPassThrough(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{})
	got, err := circuitbreaker.Run(t.Context(), b, func(context.Context) (string, error) { return "pong", nil })
	require.NoError(t, err)
	assert.Equal(t, "pong", got)

	got, err = circuitbreaker.Run(t.Context(), b, func(context.Context) (string, error) { return "partial", errBoom })
	assert.Same(t, errBoom, err, "the error comes back unchanged")
	assert.Equal(t, "partial", got)
	assert.Equal(t, circuitbreaker.Counts{ConsecutiveFailures: 1}, b.State().Counts)
}

func TestRun_CB16_OpenRejectsWithoutCalling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Minute})
		calls := 0
		fn := func(context.Context) (int, error) { calls++; return 0, errBoom }
		for range 2 {
			_, err := circuitbreaker.Run(t.Context(), b, fn)
			require.Same(t, errBoom, err)
		}
		got, err := circuitbreaker.Run(t.Context(), b, fn)
		assert.Zero(t, got)
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
		assert.Equal(t, time.Minute, oe.RetryAfter())
		assert.Equal(t, errBoom, oe.Cause)
		assert.Equal(t, 2, calls, "the rejected call was not made")
	})
}

// TestRun_CB16_ClassifiesAsLayer runs the same calls through Run and through
// the layer of NewLayer, each over its own breaker, and requires the same
// counters and the same counted/not-counted decisions: Run shares the
// layer's classification (CB8), IsFailure included.
func TestRun_CB16_ClassifiesAsLayer(t *testing.T) {
	tests := []struct {
		name string
		// before is how many failures are recorded first, so that an
		// ignored outcome (which keeps them) differs from a success (which
		// clears them).
		before int
		// doneBefore cancels the call's context before the call;
		// cancelDuring cancels it while the function runs.
		doneBefore, cancelDuring bool
		err                      error
		wantCalled               bool
		want                     circuitbreaker.Counts
	}{
		{name: "success", before: 1, wantCalled: true, want: circuitbreaker.Counts{}},
		{name: "failure", err: errBoom, wantCalled: true, want: circuitbreaker.Counts{ConsecutiveFailures: 1}},
		{name: "not a failure by IsFailure", before: 1, err: errNotFound, wantCalled: true, want: circuitbreaker.Counts{}},
		{name: "deadline is a failure", err: context.DeadlineExceeded, wantCalled: true, want: circuitbreaker.Counts{ConsecutiveFailures: 1}},
		{name: "dependency's cancellation is a failure", err: context.Canceled, wantCalled: true, want: circuitbreaker.Counts{ConsecutiveFailures: 1}},
		{name: "caller's cancellation is ignored", before: 1, cancelDuring: true, err: errBoom, wantCalled: true, want: circuitbreaker.Counts{ConsecutiveFailures: 1}},
		{name: "done before: not called, not counted", before: 1, doneBefore: true, want: circuitbreaker.Counts{ConsecutiveFailures: 1}},
	}
	cfg := circuitbreaker.Config{IsFailure: func(err error) bool { return !errors.Is(err, errNotFound) }}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// call is the protected function; it cancels its context
			// itself when the case says so.
			call := func(called *bool, cancel context.CancelFunc) func(context.Context) (string, error) {
				return func(context.Context) (string, error) {
					*called = true
					if tt.cancelDuring {
						cancel()
					}
					return "", tt.err
				}
			}
			// via runs one call through b with do and returns whether the
			// function was called, b's counters and the call's error.
			via := func(do func(ctx context.Context, b *circuitbreaker.Breaker, fn func(context.Context) (string, error)) error) (bool, circuitbreaker.Counts, error) {
				b := newBreaker(t, cfg)
				fail(t, b, tt.before, errBoom)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.doneBefore {
					cancel()
				}
				called := false
				err := do(ctx, b, call(&called, cancel))
				return called, b.State().Counts, err
			}
			runCalled, runCounters, runErr := via(func(ctx context.Context, b *circuitbreaker.Breaker, fn func(context.Context) (string, error)) error {
				_, err := circuitbreaker.Run(ctx, b, fn)
				return err
			})
			layerCalled, layerCounters, layerErr := via(func(ctx context.Context, b *circuitbreaker.Breaker, fn func(context.Context) (string, error)) error {
				_, err := guard(b, rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
					return fn(ctx)
				})).Call(ctx, "x")
				return err
			})

			assert.Equal(t, layerErr, runErr)
			assert.Equal(t, tt.wantCalled, runCalled)
			assert.Equal(t, tt.wantCalled, layerCalled)
			assert.Equal(t, tt.want, runCounters)
			assert.Equal(t, tt.want, layerCounters)
		})
	}
}

// panickingFn panics; its name must appear in the stack the caller sees.
func panickingFn(context.Context) (int, error) { panic("fn exploded") }

func TestRun_CB16_CB7_PanicIsFailureAndRepanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
		value, stack := panicOf(func() { _, _ = circuitbreaker.Run(t.Context(), b, panickingFn) })
		assert.Equal(t, "fn exploded", value)
		assert.Contains(t, stack, "circuitbreaker_test.panickingFn", "the original stack is kept")
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.Open, RetryAfter: time.Hour, Cause: circuitbreaker.ErrPanicked,
		}, b.State())
	})
}

func TestRun_CB16_NilArgumentsAreErrors(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{})
	fn := func(context.Context) (int, error) { return 1, nil }

	got, err := circuitbreaker.Run(t.Context(), nil, fn)
	assert.Zero(t, got)
	assert.EqualError(t, err, "circuitbreaker: Run: nil *Breaker (build one with circuitbreaker.New)")

	got, err = circuitbreaker.Run[int](t.Context(), b, nil)
	assert.Zero(t, got)
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "circuitbreaker: Run: nil fn: rampart: nil service")

	//lint:ignore SA1012 a nil context must not panic
	got, err = circuitbreaker.Run(nil, b, fn) //nolint:staticcheck
	assert.Zero(t, got)
	assert.EqualError(t, err, "circuitbreaker: Run: nil context (pass context.Background() or the caller's context)")
}

func TestAllocs_Run_CB16_ClosedSuccess(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{})
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 1, nil }
	allocs := testing.AllocsPerRun(1000, func() { _, _ = circuitbreaker.Run(ctx, b, fn) })
	assert.Zero(t, allocs)
}

func BenchmarkRun_ClosedSuccess(b *testing.B) {
	br := newBreaker(b, circuitbreaker.Config{})
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 1, nil }
	b.ReportAllocs()
	for b.Loop() {
		_, _ = circuitbreaker.Run(ctx, br, fn)
	}
}

func BenchmarkRun_ClosedSuccessParallel(b *testing.B) {
	br := newBreaker(b, circuitbreaker.Config{})
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 1, nil }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = circuitbreaker.Run(ctx, br, fn)
		}
	})
}
