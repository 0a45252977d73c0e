package observe_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/fallback"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// binder is a Binder that notes each Bind and hands out a recorder per
// binding.
type binder struct {
	observetest.Recorder
	binds []string
	bound []*observetest.Recorder
}

func (b *binder) Bind(source observe.Source, name string) observe.Observer {
	b.binds = append(b.binds, source.String()+" "+name)
	r := &observetest.Recorder{}
	b.bound = append(b.bound, r)
	return r
}

func TestBind_EV13_BindsABinderOnly(t *testing.T) {
	var b binder
	bound := observe.Bind(&b, observe.Breaker, "db")
	require.Equal(t, []string{"circuitbreaker db"}, b.binds)
	require.Same(t, b.bound[0], bound)

	var plain observetest.Recorder
	require.Same(t, &plain, observe.Bind(&plain, observe.Breaker, "db"))
	require.Nil(t, observe.Bind(nil, observe.Breaker, "db"))
}

func TestJoin_EV13_BindsItsParts(t *testing.T) {
	var b binder
	var plain observetest.Recorder
	joined := observe.Join(&b, &plain)
	bound := observe.Bind(joined, observe.Retry, "api")
	require.Equal(t, []string{"retry api"}, b.binds)

	e := observe.Event{Source: observe.Retry, Name: "api", Kind: observe.Retrying, Attempt: 2}
	bound.Observe(context.Background(), e)
	require.Equal(t, []observe.Event{e}, b.bound[0].Events(), "the binder's part gets the event through its bound form")
	require.Empty(t, b.Events(), "not through the unbound one")
	require.Equal(t, []observe.Event{e}, plain.Events())
}

// stack builds fallback -> timeout -> retry -> breaker ->
// load shedding -> rate limit -> concurrency limit over a service that
// succeeds, every layer reporting to obs. (A budget's deposit now and
// then arms its timer, which would make the count of allocations vary.)
func stack(t *testing.T, obs observe.Observer) rampart.Service[int, int] {
	t.Helper()
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "b", Observer: obs})
	require.NoError(t, err)
	lim, err := concurrency.New(1000)
	require.NoError(t, err)
	backend := rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req, nil })
	svc, err := rampart.NewBuilder[int, int]().
		With(fallback.NewLayer(fallback.Config[int, int]{Fallback: func(context.Context, int, error) (int, error) { return 0, nil }, Name: "f", Observer: obs})).
		With(timeout.NewLayer(timeout.Config[int, int]{Timeout: time.Second, Name: "t", Observer: obs})).
		With(retry.NewLayer(retry.Config[int, int]{Name: "r", Observer: obs})).
		Layer(circuitbreaker.NewLayer[int, int](br, nil)).
		With(loadshed.NewLayer[int, int](loadshed.Config{Readiness: lim, Name: "l", Observer: obs})).
		With(ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: rate.NewLimiter(rate.Inf, 1), Name: "rl", Observer: obs})).
		With(concurrency.NewLayer[int, int](concurrency.Config{Limiter: lim, Name: "c", Observer: obs})).
		Build(backend)
	require.NoError(t, err)
	return svc
}

// A call that every layer lets through allocates no more with observers
// than without (the timeout's deadline context, nothing more). The
// breaker reports its success, and nothing else is reported; the log
// writes nothing.
func TestStack_EV1_ObserversAddNoAllocation(t *testing.T) {
	ctx := context.Background()
	plain := stack(t, nil)
	want := testing.AllocsPerRun(1000, func() { _, _ = plain.Call(ctx, 1) })
	var buf bytes.Buffer
	log, err := observe.NewLog(observe.LogConfig{Logger: textLogger(&buf, slog.LevelDebug)})
	require.NoError(t, err)
	type key struct {
		name string
		kind observe.Kind
	}
	kinds := map[key]int{}
	count := observe.Func(func(_ context.Context, e observe.Event) { kinds[key{e.Name, e.Kind}]++ })
	for name, obs := range map[string]observe.Observer{"func": count, "log": log} {
		svc := stack(t, obs)
		// Fewer, even: an observed concurrency layer first tries for a
		// free slot, which does not ask the deadline context for its Done
		// channel (a channel the context allocates on first use).
		require.LessOrEqual(t, testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, 1) }), want, name)
	}
	require.Equal(t, map[key]int{{"b", observe.Success}: 1001}, kinds) // AllocsPerRun calls once more to warm up
	require.Empty(t, buf.String())
}

// failuresOnly is a Selector that wants a breaker's failures and no other
// kind.
type failuresOnly struct{ observetest.Recorder }

func (*failuresOnly) Wants(k observe.Kind) bool { return k == observe.Failure }

func TestWants_EV16_SelectorsSayPlainObserversWantAll(t *testing.T) {
	var sel failuresOnly
	var plain observetest.Recorder
	log, err := observe.NewLog(observe.LogConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)

	require.False(t, observe.Wants(nil, observe.Success))
	require.True(t, observe.Wants(&plain, observe.Success), "an Observer that is not a Selector wants every kind")
	require.True(t, observe.Wants(observe.Func(func(context.Context, observe.Event) {}), observe.Success))
	require.True(t, observe.Wants(&sel, observe.Failure))
	require.False(t, observe.Wants(&sel, observe.Success))
	require.False(t, observe.Wants(log, observe.Success), "a Log never writes a success")
	for _, k := range []observe.Kind{observe.Transition, observe.Failure, observe.Ignored, observe.Rejected, observe.Retrying, observe.Refused} {
		require.True(t, observe.Wants(log, k), k.String())
	}

	require.False(t, observe.Wants(observe.Join(log, &sel), observe.Success), "no part wants it")
	require.True(t, observe.Wants(observe.Join(log, &sel), observe.Failure))
	require.True(t, observe.Wants(observe.Join(log, &plain), observe.Success), "one part wants it")
	bound := observe.Bind(observe.Join(log, &sel), observe.Breaker, "db")
	require.False(t, observe.Wants(bound, observe.Success), "a joined observer, bound, still answers for its parts")
}

// Observers joined hand a breaker's success only to those that want it,
// and every other event to all, bound or not.
func TestJoin_EV16_SuccessesOnlyToThoseThatWantThem(t *testing.T) {
	var sel failuresOnly
	var plain, other observetest.Recorder
	ctx := context.Background()
	success := observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Success}
	failure := observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Failure}
	for _, j := range []observe.Observer{
		observe.Join(&sel, &plain, &other),
		observe.Bind(observe.Join(&sel, &plain, &other), observe.Breaker, "db"),
	} {
		sel, plain, other = failuresOnly{}, observetest.Recorder{}, observetest.Recorder{}
		j.Observe(ctx, success)
		j.Observe(ctx, failure)
		require.Equal(t, []observe.Event{failure}, sel.Events(), "the Selector gets no success")
		require.Equal(t, []observe.Event{success, failure}, plain.Events())
		require.Equal(t, []observe.Event{success, failure}, other.Events())
	}

	sel = failuresOnly{}
	plain = observetest.Recorder{}
	one := observe.Join(&sel, &plain)
	one.Observe(ctx, success)
	require.Empty(t, sel.Events())
	require.Equal(t, []observe.Event{success}, plain.Events())

	var sel2 failuresOnly
	sel = failuresOnly{}
	none := observe.Join(&sel, &sel2)
	require.False(t, observe.Wants(none, observe.Success))
	none.Observe(ctx, success)
	none.Observe(ctx, failure)
	require.Equal(t, []observe.Event{failure}, sel.Events())
	require.Equal(t, []observe.Event{failure}, sel2.Events())
}

// A nil Func, a nil *Log and a zero Log observe nothing, whatever layer
// they are given to and whether joined or not: a breaker that trips and
// refuses, and a timeout that fires, report to them without a panic, and
// an observer joined with them still sees every event.
func TestObservers_EV1_NilFuncAndNilOrZeroLogObserveNothing(t *testing.T) {
	for name, obs := range map[string]observe.Observer{
		"nil Func": observe.Func(nil),
		"nil Log":  (*observe.Log)(nil),
		"zero Log": new(observe.Log),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec observetest.Recorder
				observetest.Exercise(t, obs)
				observetest.Exercise(t, observe.Join(obs, &rec))
				if l, ok := obs.(*observe.Log); ok {
					l.Flush()
				}
				var kinds []string
				for _, e := range rec.Events() {
					kinds = append(kinds, e.Source.String()+" "+e.Kind.String())
				}
				require.Equal(t, []string{"circuitbreaker transition", "circuitbreaker failure", "circuitbreaker rejected", "timeout timeout-fired"}, kinds)
			})
		})
	}
}
