package coalesce_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/coalesce"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type ctxKey struct{}

// gate is a backend whose calls block until released, recording each call.
type gate struct {
	release chan struct{}
	calls   atomic.Int64
	mu      sync.Mutex
	ctxs    []context.Context
}

func newGate() *gate { return &gate{release: make(chan struct{})} }

func (g *gate) Call(ctx context.Context, req string) (string, error) {
	g.calls.Add(1)
	g.mu.Lock()
	g.ctxs = append(g.ctxs, ctx)
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	switch req {
	case "fail":
		return "", errBoom
	case "panic":
		panic(errBoom)
	}
	return "resp:" + req, nil
}

func (g *gate) ctx(i int) context.Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ctxs[i]
}

var errBoom = errors.New("boom")

func identity(s string) string { return s }

func build(t *testing.T, inner rampart.Service[string, string]) rampart.Service[string, string] {
	t.Helper()
	layer, err := coalesce.NewLayer[string, string](coalesce.Config[string]{Key: identity})
	require.NoError(t, err)
	return layer.Wrap(inner)
}

type result struct {
	resp string
	err  error
}

// start makes n concurrent calls for req and returns their results channel.
func start(ctx context.Context, svc rampart.Service[string, string], req string, n int) <-chan result {
	out := make(chan result, n)
	for range n {
		go func() {
			resp, err := svc.Call(ctx, req)
			out <- result{resp, err}
		}()
	}
	return out
}

func TestNewLayer_RequiresKey(t *testing.T) {
	_, err := coalesce.NewLayer[string, string](coalesce.Config[string]{Key: nil})
	assert.EqualError(t, err, "coalesce: Key must not be nil")
}

func TestLayer_ConcurrentEqualKeysShareOneCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		svc := build(t, g)
		a := start(t.Context(), svc, "a", 5)
		b := start(t.Context(), svc, "b", 3)
		synctest.Wait()
		assert.Equal(t, int64(2), g.calls.Load(), "one call per distinct key")

		close(g.release)
		for range 5 {
			assert.Equal(t, result{resp: "resp:a"}, <-a)
		}
		for range 3 {
			assert.Equal(t, result{resp: "resp:b"}, <-b)
		}

		// Nothing is cached: the next call calls again.
		resp, err := svc.Call(t.Context(), "a")
		assert.NoError(t, err)
		assert.Equal(t, "resp:a", resp)
		assert.Equal(t, int64(3), g.calls.Load())
	})
}

func TestLayer_ErrorReachesEveryCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		out := start(t.Context(), build(t, g), "fail", 4)
		synctest.Wait()
		close(g.release)
		for range 4 {
			r := <-out
			assert.Same(t, errBoom, r.err)
		}
		assert.Equal(t, int64(1), g.calls.Load())
	})
}

func TestLayer_PanicReachesEveryCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		svc := build(t, g)
		panics := make(chan any, 3)
		for range 3 {
			go func() {
				defer func() { panics <- recover() }()
				_, _ = svc.Call(t.Context(), "panic")
			}()
		}
		synctest.Wait()
		close(g.release)
		for range 3 {
			p := <-panics
			pe, ok := p.(*coalesce.PanicError)
			require.True(t, ok, "panic value %T", p)
			assert.Same(t, errBoom, pe.Value)
			assert.ErrorIs(t, pe, errBoom)
			assert.Contains(t, string(pe.Stack), "coalesce_test.(*gate).Call", "the stack is the original panic's")
		}
		assert.Equal(t, int64(1), g.calls.Load())
	})
}

// A shared call that panicked leaves nothing behind for its key: the
// next call with that key makes a call of its own and gets its answer,
// rather than joining a call that will never answer (a fault reported of
// hand-made singleflights, golang/go#33519, cockroachdb/cockroach#174960).
func TestLayer_PanicLeavesNoStaleCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		svc := build(t, rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			if calls.Add(1) == 1 {
				panic(errBoom)
			}
			return "second", nil
		}))
		func() {
			defer func() { assert.IsType(t, &coalesce.PanicError{}, recover()) }()
			_, _ = svc.Call(t.Context(), "k")
		}()

		resp, err := svc.Call(t.Context(), "k")

		require.NoError(t, err)
		assert.Equal(t, "second", resp)
		assert.Equal(t, int32(2), calls.Load())
	})
}

func TestLayer_CallerLeavingDetachesOnlyThatCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		svc := build(t, g)
		impatient, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		first := start(impatient, svc, "a", 1)
		synctest.Wait()
		others := start(t.Context(), svc, "a", 2)
		synctest.Wait()

		time.Sleep(time.Second)
		r := <-first
		assert.Equal(t, context.DeadlineExceeded, r.err)
		assert.NoError(t, g.ctx(0).Err(), "the shared call goes on for the others")
		_, hasDeadline := g.ctx(0).Deadline()
		assert.False(t, hasDeadline, "the shared call has no deadline of its own")

		close(g.release)
		for range 2 {
			assert.Equal(t, result{resp: "resp:a"}, <-others)
		}
		assert.Equal(t, int64(1), g.calls.Load())
	})
}

func TestLayer_LastCallerLeavingCancelsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		svc := build(t, g)
		ctx, cancel := context.WithCancel(context.WithValue(t.Context(), ctxKey{}, "first"))
		out := start(ctx, svc, "a", 3)
		synctest.Wait()
		assert.Equal(t, "first", g.ctx(0).Value(ctxKey{}), "the shared call carries the first caller's values")

		cancel()
		for range 3 {
			assert.Same(t, context.Canceled, (<-out).err)
		}
		synctest.Wait()
		assert.Same(t, context.Canceled, g.ctx(0).Err())

		// A new caller starts a fresh call rather than joining the cancelled one.
		fresh := start(t.Context(), svc, "a", 1)
		synctest.Wait()
		assert.Equal(t, int64(2), g.calls.Load())
		assert.NoError(t, g.ctx(1).Err())
		close(g.release)
		assert.Equal(t, result{resp: "resp:a"}, <-fresh)
	})
}

// A caller that leaves while the inner service ignores cancellation does
// not make the next caller join the abandoned call.
func TestLayer_AbandonedCallIsNotJoined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := make(chan struct{})
		var calls atomic.Int64
		svc := build(t, rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			if calls.Add(1) == 1 {
				<-stuck // ignores ctx
				return "stale", nil
			}
			return "fresh", nil
		}))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := svc.Call(ctx, "a")
		assert.Equal(t, context.DeadlineExceeded, err)

		resp, err := svc.Call(t.Context(), "a")
		assert.NoError(t, err)
		assert.Equal(t, "fresh", resp)
		close(stuck)
	})
}

func TestLayer_DoneContextJoinsNothing(t *testing.T) {
	g := newGate()
	svc := build(t, g)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := svc.Call(ctx, "a")
	assert.Same(t, context.Canceled, err)
	assert.Zero(t, g.calls.Load())
}

func TestLayer_EmptyKeyIsNotCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		layer, err := coalesce.NewLayer[string, string](coalesce.Config[string]{Key: func(string) string { return "" }})
		require.NoError(t, err)
		out := start(t.Context(), layer.Wrap(g), "a", 3)
		synctest.Wait()
		assert.Equal(t, int64(3), g.calls.Load())
		close(g.release)
		for range 3 {
			assert.Equal(t, result{resp: "resp:a"}, <-out)
		}
	})
}

// Many callers over few keys, a third of them leaving early: at most one
// inner call per key at a time, every caller gets its key's answer or its
// own context's error, and no goroutine outlives the test (TestMain).
func TestLayer_Hammer(t *testing.T) {
	const keys, workers, perWorker = 4, 16, 200
	var running [keys]atomic.Int64
	var calls atomic.Int64
	svc := build(t, rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		calls.Add(1)
		var k int
		_, _ = fmt.Sscan(req, &k)
		if n := running[k].Add(1); n > 1 {
			t.Errorf("%d concurrent inner calls for key %d", n, k)
		}
		defer running[k].Add(-1)
		select {
		case <-time.After(10 * time.Microsecond):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "resp:" + req, nil
	}))
	var wg sync.WaitGroup
	var served atomic.Int64
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				req := fmt.Sprint((w + i) % keys)
				ctx, cancel := context.WithCancel(context.Background())
				if i%3 == 0 {
					cancel()
				}
				resp, err := svc.Call(ctx, req)
				cancel()
				switch {
				case err == nil && resp == "resp:"+req:
					served.Add(1)
				case errors.Is(err, context.Canceled):
				default:
					t.Errorf("Call(%s) = %q, %v", req, resp, err)
				}
			}
		})
	}
	wg.Wait()
	const leftEarly = (perWorker + 2) / 3 // i = 0, 3, ..., 198
	assert.Equal(t, int64(workers*(perWorker-leftEarly)), served.Load())
	assert.LessOrEqual(t, calls.Load(), served.Load())
}

func BenchmarkLayer(b *testing.B) {
	layer, err := coalesce.NewLayer[string, string](coalesce.Config[string]{Key: identity})
	if err != nil {
		b.Fatal(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		return req, nil
	}))
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = svc.Call(ctx, "key")
		}
	})
}

func TestNewLayer_Wraps(t *testing.T) {
	svc, err := wrap.Service(rampart.ServiceFunc[string, int](func(ctx context.Context, req string) (int, error) {
		return len(req), nil
	}), coalesce.NewLayer, coalesce.Config[string]{Key: identity})
	require.NoError(t, err)
	resp, err := svc.Call(t.Context(), "abc")
	assert.NoError(t, err)
	assert.Equal(t, 3, resp)
	_, err = coalesce.NewLayer[string, int](coalesce.Config[string]{})
	assert.EqualError(t, err, "coalesce: Key must not be nil")
}

// A shared call that ends with runtime.Goexit fails its callers with
// ErrGoexit instead of leaving them waiting, and the next call starts anew.
func TestLayer_GoexitFailsEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int32
		svc, err := wrap.Service(rampart.ServiceFunc[string, int](func(ctx context.Context, req string) (int, error) {
			if calls.Add(1) == 1 {
				<-release
				runtime.Goexit()
			}
			return 7, nil
		}), coalesce.NewLayer, coalesce.Config[string]{Key: func(req string) string { return req }})
		require.NoError(t, err)

		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := svc.Call(context.Background(), "k")
				errs <- err
			}()
		}
		synctest.Wait()
		close(release)
		for range 3 {
			assert.ErrorIs(t, <-errs, coalesce.ErrGoexit)
		}
		got, err := svc.Call(context.Background(), "k")
		require.NoError(t, err)
		assert.Equal(t, 7, got)
		assert.Equal(t, int32(2), calls.Load())
	})
}

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	key := func(req string) string { return req }
	ok := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "nil key",
			Build: func() (rampart.Service[string, string], error) {
				return wrap.Service(ok, coalesce.NewLayer, coalesce.Config[string]{})
			},
			Want: "coalesce: Key must not be nil",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := coalesce.NewLayer[string, string](coalesce.Config[string]{Key: key})
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "coalesce: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}

func TestCoalesce_EV8_Joined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		slow := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
			time.Sleep(time.Second)
			return req, nil
		})
		svc, err := wrap.Service(slow, coalesce.NewLayer, coalesce.Config[string]{
			Key: func(req string) string { return req }, Name: "users", Observer: &rec,
		})
		require.NoError(t, err)
		var wg sync.WaitGroup
		for _, req := range []string{"a", "a", "b", "a"} {
			wg.Go(func() { _, _ = svc.Call(t.Context(), req) })
			synctest.Wait() // in this order
		}
		wg.Wait()
		joined := observe.Event{Source: observe.Coalesce, Name: "users", Kind: observe.Joined}
		require.Equal(t, []observe.Event{joined, joined}, rec.Events())
		_, _ = svc.Call(t.Context(), "a") // nothing in flight any more
		require.Len(t, rec.Events(), 2)
	})
}

// A caller joins a shared call only when that call is at least as
// critical as its own: the shared call runs with the criticality of the
// caller that started it, and a limit or shedder below judges it by that.
// A critical caller that joined a sheddable call would be shed with it (a
// priority inversion); it starts a call of its own instead, which later
// callers of its criticality or below join.
func TestCoalesce_PG8_JoinsOnlyAsCriticalACall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		svc := build(t, g)
		sheddable := rampart.WithCriticality(t.Context(), rampart.Sheddable)
		critical := rampart.WithCriticality(t.Context(), rampart.Critical)

		first := start(sheddable, svc, "a", 1)
		synctest.Wait()
		second := start(critical, svc, "a", 1)
		synctest.Wait()
		require.Equal(t, int64(2), g.calls.Load(), "the critical caller started its own call")
		assert.Equal(t, rampart.Sheddable, rampart.CriticalityOf(g.ctx(0)))
		assert.Equal(t, rampart.Critical, rampart.CriticalityOf(g.ctx(1)))

		// Default callers join the critical call (none of their own is in
		// flight); another sheddable one joins the sheddable call, of its
		// own criticality.
		rest := start(t.Context(), svc, "a", 2)
		more := start(sheddable, svc, "a", 1)
		synctest.Wait()
		assert.Equal(t, int64(2), g.calls.Load(), "no third call")

		close(g.release)
		for _, ch := range []<-chan result{first, second, rest, rest, more} {
			assert.Equal(t, result{resp: "resp:a"}, <-ch)
		}
	})
}
