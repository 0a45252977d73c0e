package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/fallback"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	errDown    = errors.New("down")
	errInvalid = errors.New("invalid")
)

// backend fails with the error named by req, or answers "live".
func backend(ctx context.Context, req string) (string, error) {
	switch req {
	case "down":
		return "partial", errDown
	case "invalid":
		return "", errInvalid
	case "slow":
		<-ctx.Done()
		return "", ctx.Err()
	}
	return "live", nil
}

// build returns a stack whose fallback answers "fallback for REQ: ERR" and
// counts its calls.
func build(t *testing.T, when func(error) bool, calls *atomic.Int64) rampart.Service[string, string] {
	t.Helper()
	layer, err := fallback.NewLayer(fallback.Config[string, string]{
		Fallback: func(ctx context.Context, req string, err error) (string, error) {
			calls.Add(1)
			return fmt.Sprintf("fallback for %s: %v", req, err), nil
		},
		When: when,
	})
	require.NoError(t, err)
	return layer.Wrap(rampart.ServiceFunc[string, string](backend))
}

func TestNewLayer_RequiresFallback(t *testing.T) {
	_, err := fallback.NewLayer(fallback.Config[string, string]{})
	assert.EqualError(t, err, "fallback: Fallback must not be nil")
}

func TestLayer_AnswersFailures(t *testing.T) {
	var calls atomic.Int64
	svc := build(t, nil, &calls)

	resp, err := svc.Call(t.Context(), "ok")
	assert.NoError(t, err)
	assert.Equal(t, "live", resp)
	assert.Zero(t, calls.Load(), "success must not call the fallback")

	resp, err = svc.Call(t.Context(), "down")
	assert.NoError(t, err)
	assert.Equal(t, "fallback for down: down", resp)
	assert.Equal(t, int64(1), calls.Load())
}

func TestLayer_WhenSelectsFailures(t *testing.T) {
	var calls atomic.Int64
	svc := build(t, func(err error) bool { return !errors.Is(err, errInvalid) }, &calls)

	resp, err := svc.Call(t.Context(), "invalid")
	assert.Same(t, errInvalid, err)
	assert.Empty(t, resp)

	resp, err = svc.Call(t.Context(), "down")
	assert.NoError(t, err)
	assert.Equal(t, "fallback for down: down", resp)
	assert.Equal(t, int64(1), calls.Load())
}

func TestLayer_NeverAnswersAnAbandonedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		svc := build(t, nil, &calls)

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		_, err := svc.Call(ctx, "slow")
		assert.Same(t, context.Canceled, err)

		ctx, cancel = context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = svc.Call(ctx, "slow")
		assert.Equal(t, context.DeadlineExceeded, err)

		// A failure returned after the caller gave up is also returned as is.
		_, err = svc.Call(ctx, "down")
		assert.Same(t, errDown, err)
		assert.Zero(t, calls.Load())
	})
}

// A deadline inside the layer (a timeout layer's) is a failure like any
// other: the caller is still waiting.
func TestLayer_AnswersInnerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		layer, err := fallback.NewLayer(fallback.Config[string, string]{
			Fallback: func(ctx context.Context, req string, err error) (string, error) {
				calls.Add(1)
				return "cached", nil
			},
		})
		require.NoError(t, err)
		innerTimeout := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			return backend(ctx, req)
		})
		svc := layer.Wrap(innerTimeout)
		start := time.Now()
		resp, err := svc.Call(t.Context(), "slow")
		assert.NoError(t, err)
		assert.Equal(t, "cached", resp)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		assert.Equal(t, int64(1), calls.Load())
	})
}

func TestLayer_FallbackErrorReturned(t *testing.T) {
	layer, err := fallback.NewLayer(fallback.Config[string, string]{
		Fallback: func(ctx context.Context, req string, err error) (string, error) {
			return "", fmt.Errorf("no cached copy of %q: %w", req, err)
		},
	})
	require.NoError(t, err)
	svc := layer.Wrap(rampart.ServiceFunc[string, string](backend))
	_, err = svc.Call(t.Context(), "down")
	assert.EqualError(t, err, `no cached copy of "down": down`)
	assert.ErrorIs(t, err, errDown)
}

func TestLayer_PanicPropagates(t *testing.T) {
	var calls atomic.Int64
	layer, err := fallback.NewLayer(fallback.Config[string, string]{
		Fallback: func(ctx context.Context, req string, err error) (string, error) {
			calls.Add(1)
			return "", nil
		},
	})
	require.NoError(t, err)
	svc := layer.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		panic("inner panic")
	}))
	assert.PanicsWithValue(t, "inner panic", func() { _, _ = svc.Call(t.Context(), "x") })
	assert.Zero(t, calls.Load())
}

func TestLayer_Concurrent(t *testing.T) {
	var calls atomic.Int64
	svc := build(t, nil, &calls)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				resp, err := svc.Call(context.Background(), "down")
				if err != nil || resp != "fallback for down: down" {
					t.Errorf("Call = %q, %v", resp, err)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(800), calls.Load())
}

func TestLayer_SuccessAllocatesNothing(t *testing.T) {
	var calls atomic.Int64
	svc := build(t, nil, &calls)
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, "ok") }))
}

func BenchmarkLayer(b *testing.B) {
	layer, err := fallback.NewLayer(fallback.Config[string, string]{
		Fallback: func(ctx context.Context, req string, err error) (string, error) { return "cached", nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[string, string](backend))
	ctx := context.Background()
	for _, req := range []string{"ok", "down"} {
		b.Run(req, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = svc.Call(ctx, req)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	svc, err := wrap.Service(rampart.ServiceFunc[string, string](backend), fallback.NewLayer, fallback.Config[string, string]{
		Fallback: func(ctx context.Context, req string, err error) (string, error) { return "cached", nil },
	})
	require.NoError(t, err)
	resp, err := svc.Call(t.Context(), "down")
	assert.NoError(t, err)
	assert.Equal(t, "cached", resp)
	_, err = wrap.Service(rampart.ServiceFunc[string, string](backend), fallback.NewLayer, fallback.Config[string, string]{})
	assert.EqualError(t, err, "fallback: Fallback must not be nil")
}

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	cfg := fallback.Config[string, string]{Fallback: func(context.Context, string, error) (string, error) { return "fallback", nil }}
	ok := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "zero Config",
			Build: func() (rampart.Service[string, string], error) {
				return wrap.Service(ok, fallback.NewLayer, fallback.Config[string, string]{})
			},
			Want: "fallback: Fallback must not be nil",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := fallback.NewLayer(cfg)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "fallback: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}

func TestFallback_EV7_Used(t *testing.T) {
	var rec observetest.Recorder
	errDown := errors.New("down")
	inner := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
		if req == "fail" {
			return "", errDown
		}
		return req, nil
	})
	svc, err := wrap.Service(inner, fallback.NewLayer, fallback.Config[string, string]{
		Fallback: func(context.Context, string, error) (string, error) { return "cached", nil },
		Name:     "profile", Observer: &rec,
	})
	require.NoError(t, err)
	resp, err := svc.Call(context.Background(), "ok")
	require.NoError(t, err)
	require.Equal(t, "ok", resp)
	require.Empty(t, rec.Events())
	resp, err = svc.Call(context.Background(), "fail")
	require.NoError(t, err)
	require.Equal(t, "cached", resp)
	require.Equal(t, []observe.Event{
		{Source: observe.Fallback, Name: "profile", Kind: observe.FallbackUsed, Err: errDown},
	}, rec.Events())
}
