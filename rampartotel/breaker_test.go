package rampartotel_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/inspect"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartotel"
)

// point is the key of a breaker point in collect's map.
func point(metric, name string, kv ...string) string {
	attrs := append([]string{"rampart.layer=circuitbreaker", "rampart.name=" + name}, kv...)
	slices.Sort(attrs) // as the encoder orders the keys
	return metric + "{" + strings.Join(attrs, ",") + "}"
}

// A breaker's state gauge, transitions and time per state exist from the
// moment it is created, and the time per state is measured exactly.
func TestObserver_EV11_StateTimeAndZeroSeriesFromBind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs, reader := newObserver(t)
		b, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 10 * time.Second, Observer: obs})
		require.NoError(t, err)
		points, _ := collect(t, reader)
		require.Equal(t, 1.0, points[point("rampart.breaker.state", "db", "rampart.breaker.state=closed")])
		require.Equal(t, 0.0, points[point("rampart.breaker.transitions", "db", "rampart.breaker.from=closed", "rampart.breaker.to=open")])
		require.Contains(t, points, point("rampart.breaker.transitions", "db", "rampart.breaker.from=half-open", "rampart.breaker.to=closed"))

		time.Sleep(5 * time.Second)
		p, _ := b.TryAcquire()
		p.Failure(errors.New("down")) // open at 5s
		time.Sleep(15 * time.Second)
		p, err = b.TryAcquire() // the observer is told at 20s; half-open since the cool-down's end, 15s
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
		p.Success() // closed at 22s
		time.Sleep(8 * time.Second)

		points, _ = collect(t, reader)
		seconds := func(state string) float64 {
			return points[point("rampart.breaker.state.time", "db", "rampart.breaker.state="+state)]
		}
		require.Equal(t, 13.0, seconds("closed"), "0-5s and 22-30s")
		require.Equal(t, 10.0, seconds("open"), "5-15s: the cool-down")
		require.Equal(t, 7.0, seconds("half-open"), "15-22s")
		require.Equal(t, 0.0, seconds("forced-open"))
		for _, ft := range [][2]string{{"closed", "open"}, {"open", "half-open"}, {"half-open", "closed"}} {
			require.Equal(t, 1.0, points[point("rampart.breaker.transitions", "db", "rampart.breaker.from="+ft[0], "rampart.breaker.to="+ft[1])])
		}
		runtime.KeepAlive(b)
	})
}

// Two breakers that share a Name share one record: their calls add up and
// the state gauge counts them by state.
func TestObserver_EV14_SameNameSharesARecord(t *testing.T) {
	obs, reader := newObserver(t)
	cfg := circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1}, Observer: obs}
	a, err := circuitbreaker.New(cfg)
	require.NoError(t, err)
	b, err := circuitbreaker.New(cfg)
	require.NoError(t, err)
	p, _ := a.TryAcquire()
	p.Success()
	p, _ = b.TryAcquire()
	p.Failure(errors.New("down"))
	points, _ := collect(t, reader)
	require.Equal(t, 1.0, points[point("rampart.breaker.calls", "db", "rampart.outcome=success")])
	require.Equal(t, 1.0, points[point("rampart.breaker.calls", "db", "rampart.outcome=failure")])
	require.Equal(t, 1.0, points[point("rampart.breaker.state", "db", "rampart.breaker.state=closed")])
	require.Equal(t, 1.0, points[point("rampart.breaker.state", "db", "rampart.breaker.state=open")])
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}

// A breaker replaced under its name leaves the state gauge once it is
// collected; its calls stay in the name's totals.
func TestObserver_EV14_ReplacedBreakerLeavesWhenCollected(t *testing.T) {
	obs, reader := newObserver(t)
	cfg := circuitbreaker.Config{Name: "db", Observer: obs}
	old, err := circuitbreaker.New(cfg)
	require.NoError(t, err)
	p, _ := old.TryAcquire()
	p.Success()
	cur, err := circuitbreaker.New(cfg) // replaces old, which nothing holds now
	require.NoError(t, err)
	closed := point("rampart.breaker.state", "db", "rampart.breaker.state=closed")
	points, _ := collect(t, reader)
	require.Equal(t, 2.0, points[closed])
	// Cleanups run on their own goroutine after a collection: wait for it.
	require.Eventually(t, func() bool {
		runtime.GC()
		points, _ = collect(t, reader)
		return points[closed] == 1
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, 1.0, points[point("rampart.breaker.calls", "db", "rampart.outcome=success")])
	runtime.KeepAlive(cur)
}

// 5,000 tenants behind a Group, each failing once: by default one set of
// series for the group, and every failure counted; with KeySeries, at
// most that many keys have series of their own, and the totals over the
// series are still exact.
func TestObserver_EV14_FiveThousandTenantsExact(t *testing.T) {
	const tenants = 5000
	for _, keySeries := range []int{0, 100} {
		t.Run("KeySeries="+strconv.Itoa(keySeries), func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			obs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), KeySeries: keySeries})
			require.NoError(t, err)
			g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Name: "tenants", Observer: obs}})
			require.NoError(t, err)
			layer, err := circuitbreaker.NewGroupLayer[string, string](g, func(key string) string { return key }, nil)
			require.NoError(t, err)
			errDown := errors.New("down")
			svc := layer.Wrap(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", errDown }))
			for i := range tenants {
				_, _ = svc.Call(context.Background(), "t"+strconv.Itoa(i))
			}
			points, _ := collect(t, reader)
			var failures float64
			series := 0
			for k, v := range points {
				if strings.HasPrefix(k, "rampart.breaker.calls{") && strings.HasSuffix(k, "rampart.outcome=failure}") {
					failures += v
					series++
				}
			}
			require.Equal(t, float64(tenants), failures, "every failure counted once")
			require.Equal(t, keySeries+1, series, "the keys with series of their own, and the group's")
		})
	}
}

// keyedSeries counts the rampart.breaker.state series of one key (the
// closed one) in points.
func keyedSeries(points map[string]float64) int {
	n := 0
	for k := range points {
		if strings.HasPrefix(k, "rampart.breaker.state{") && strings.Contains(k, "rampart.key=") && strings.Contains(k, "rampart.breaker.state=closed") {
			n++
		}
	}
	return n
}

// Once a Group's breakers are dropped, what the Observer holds for them is
// gone: its heap goes back to where it was before they came, measured
// after a collection.
func TestObserver_EV14_MemoryBackToBaselineAfterEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		// A cardinality limit above the series of 5,000 keys (5 states
		// each): the SDK's default (2,000 a metric) would fold most keys
		// into its overflow point.
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithCardinalityLimit(30_000))
		obs, err := rampartotel.New(rampartotel.Config{MeterProvider: mp, KeySeries: 10_000})
		require.NoError(t, err)
		g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Name: "tenants", Observer: obs}, IdleTimeout: time.Minute})
		require.NoError(t, err)
		layer, err := circuitbreaker.NewGroupLayer[string, string](g, func(key string) string { return key }, nil)
		require.NoError(t, err)
		svc := layer.Wrap(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil }))
		collect(t, reader)
		heap := func() int64 {
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return int64(ms.HeapAlloc)
		}
		base := heap()
		for i := range 5000 {
			_, _ = svc.Call(context.Background(), "t"+strconv.Itoa(i))
		}
		points, _ := collect(t, reader)
		require.Equal(t, 5000, keyedSeries(points), "a state series per key")
		peak := heap()
		g.Len() // the group notes every key used
		time.Sleep(2 * time.Minute)
		require.Zero(t, g.Len(), "every key dropped")
		points, _ = collect(t, reader)
		require.Zero(t, keyedSeries(points), "no key's series left")
		after := heap()
		t.Logf("heap: base %d, with 5000 keys +%d, after eviction %+d bytes", base, peak-base, after-base)
		if raceEnabled {
			return
		}
		require.Greater(t, peak-base, int64(5000*1024), "each key's breaker and series took room")
		require.Less(t, after-base, (peak-base)/100, "within 1% of what the keys took: the records map is made anew once it empties (a Go map keeps its room)")
		runtime.KeepAlive(svc)
	})
}

// By default a Group's breakers are aggregated under the Group's name: its
// series do not grow with its keys, the state gauge counts its breakers in
// each state, and a dropped breaker leaves the gauge.
func TestObserver_EV14_GroupAggregatedByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs, reader := newObserver(t)
		g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
			Breaker: circuitbreaker.Config{Name: "g", Observer: obs}, IdleTimeout: time.Minute,
		})
		require.NoError(t, err)
		layer, err := circuitbreaker.NewGroupLayer[string, string](g, func(key string) string { return key }, nil)
		require.NoError(t, err)
		svc := layer.Wrap(rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil }))
		_, _ = svc.Call(context.Background(), "a")
		time.Sleep(30 * time.Second)
		_, _ = svc.Call(context.Background(), "b")

		points, _ := collect(t, reader)
		require.Equal(t, 2.0, points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=g,rampart.outcome=success}"])
		require.Equal(t, 3.0, points["rampart.breaker.state{rampart.breaker.state=closed,rampart.layer=circuitbreaker,rampart.name=g}"], "a, b and the overflow")

		time.Sleep(45 * time.Second) // a idle for 75s, b for 45s
		require.Equal(t, 1, g.Len())
		points, _ = collect(t, reader)
		require.Equal(t, 2.0, points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=g,rampart.outcome=success}"], "the group's totals stay")
		require.Equal(t, 2.0, points["rampart.breaker.state{rampart.breaker.state=closed,rampart.layer=circuitbreaker,rampart.name=g}"], "b and the overflow")
		names := map[string]bool{}
		for k := range points {
			names[k] = true
		}
		want := map[string]bool{}
		for _, outcome := range []string{"failure", "ignored", "rejected", "success"} {
			want["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=g,rampart.outcome="+outcome+"}"] = true
		}
		for _, state := range []string{"closed", "open", "half-open", "forced-open", "forced-closed"} {
			want["rampart.breaker.state{rampart.breaker.state="+state+",rampart.layer=circuitbreaker,rampart.name=g}"] = true
			want["rampart.breaker.state.time{rampart.breaker.state="+state+",rampart.layer=circuitbreaker,rampart.name=g}"] = true
		}
		for k := range withZeroTransitions(map[string]float64{}, "g") {
			want[k] = true
		}
		require.Equal(t, want, names, "one set of series for the group, whatever its keys")
	})
}

// With KeySeries, the first keys get series of their own (rampart.key),
// the others are aggregated under the group's name, and a dropped key's
// series go, making room for another: the totals are exact either way.
func TestObserver_EV14_KeySeriesBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		obs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), KeySeries: 2})
		require.NoError(t, err)
		g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
			Breaker: circuitbreaker.Config{Name: "g", Observer: obs}, IdleTimeout: time.Minute,
		})
		require.NoError(t, err)
		layer, err := circuitbreaker.NewGroupLayer[string, string](g, func(key string) string { return key }, nil)
		require.NoError(t, err)
		svc := layer.Wrap(rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil }))
		for _, key := range []string{"a", "b", "c", "a", "c"} {
			_, _ = svc.Call(context.Background(), key)
		}
		success := func(points map[string]float64) map[string]float64 {
			got := map[string]float64{}
			for k, v := range points {
				if strings.HasPrefix(k, "rampart.breaker.calls{") && strings.HasSuffix(k, "rampart.outcome=success}") {
					got[k] = v
				}
			}
			return got
		}
		points, _ := collect(t, reader)
		require.Equal(t, map[string]float64{
			"rampart.breaker.calls{rampart.key=a,rampart.layer=circuitbreaker,rampart.name=g,rampart.outcome=success}": 2,
			"rampart.breaker.calls{rampart.key=b,rampart.layer=circuitbreaker,rampart.name=g,rampart.outcome=success}": 1,
			"rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=g,rampart.outcome=success}":               2, // c, past the bound
		}, success(points))

		g.Len()                     // the group notes that a, b and c were used
		time.Sleep(2 * time.Minute) // every key idle since
		require.Zero(t, g.Len(), "every key dropped, and reported")
		_, _ = svc.Call(context.Background(), "d")
		points, _ = collect(t, reader)
		require.Equal(t, map[string]float64{
			"rampart.breaker.calls{rampart.key=d,rampart.layer=circuitbreaker,rampart.name=g,rampart.outcome=success}": 1,
			"rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=g,rampart.outcome=success}":               2,
		}, success(points), "a and b dropped, making room for d")
	})
}

// A Config.KeySeries below zero is an error.
func TestObserver_EV14_BadKeySeries(t *testing.T) {
	_, err := rampartotel.New(rampartotel.Config{KeySeries: -1})
	require.EqualError(t, err, "rampartotel: Config.KeySeries must be >= 0 (0 means a Group's breakers are aggregated under its Name), got -1")
}

// A name stays while any breaker bound to it is left: a group may drop a
// key's breaker and create a new one for it before the drop is reported.
func TestObserver_EV14_NameStaysWhileABreakerIsBoundToIt(t *testing.T) {
	obs, reader := newObserver(t)
	ctx := context.Background()
	old := obs.Bind(observe.Breaker, "g/a")
	cur := obs.Bind(observe.Breaker, "g/a")
	success := observe.Event{Source: observe.Breaker, Name: "g/a", Kind: observe.Success}
	removed := observe.Event{Source: observe.Breaker, Name: "g/a", Kind: observe.Removed}
	cur.Observe(ctx, success)
	old.Observe(ctx, removed)
	old.Observe(ctx, removed) // reported twice: counted once
	obs.Observe(ctx, removed) // unbound: cannot release a bound breaker
	cur.Observe(ctx, success)
	const calls = "rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=g/a,rampart.outcome=success}"
	points, _ := collect(t, reader)
	require.Equal(t, 2.0, points[calls])

	cur.Observe(ctx, removed)
	points, _ = collect(t, reader)
	require.NotContains(t, points, calls)
}

// wrappedNoop is a MeterProvider of its own type that hands out the no-op
// meter, as a provider wrapper may.
type wrappedNoop struct{ noop.MeterProvider }

func (w wrappedNoop) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return w.MeterProvider.Meter(name, opts...)
}

// With a no-op meter, whoever provides it, a breaker bound to the Observer
// is not told of its successes (they cost what they cost without an
// Observer) and its rejections still become span events; without span
// events it is bound to nothing.
func TestObserver_EV16_NoopMeterTakesNoSuccesses(t *testing.T) {
	for _, mp := range []metric.MeterProvider{noop.NewMeterProvider(), &noop.MeterProvider{}, wrappedNoop{}} {
		obs, err := rampartotel.New(rampartotel.Config{MeterProvider: mp})
		require.NoError(t, err)
		bound := observe.Bind(obs, observe.Breaker, "db")
		require.NotNil(t, bound, "%T", mp)
		require.False(t, observe.Wants(bound, observe.Success), "%T", mp)
		require.False(t, observe.Wants(bound, observe.Failure), "%T", mp)
		require.True(t, observe.Wants(bound, observe.Rejected), "%T", mp)

		quiet, err := rampartotel.New(rampartotel.Config{MeterProvider: mp, NoSpanEvents: true})
		require.NoError(t, err)
		require.Nil(t, observe.Bind(quiet, observe.Breaker, "db"), "%T", mp)
	}

	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")
	obs, err := rampartotel.New(rampartotel.Config{MeterProvider: noop.NewMeterProvider()})
	require.NoError(t, err)
	sw := &circuitbreaker.Switch{}
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: obs, Switch: sw})
	require.NoError(t, err)
	svc := circuitbreaker.NewLayer[int, int](br, nil).Wrap(echo)
	ctx, span := tracer.Start(context.Background(), "call")
	_, err = svc.Call(ctx, 1)
	require.NoError(t, err)
	sw.ForceOpen(nil)
	_, err = svc.Call(ctx, 1)
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	span.End()
	var names []string
	for _, ev := range spans.Ended()[0].Events() {
		names = append(names, ev.Name)
	}
	require.Equal(t, []string{"rampart.circuitbreaker.rejected"}, names)
}

// On a recording provider, the bound breaker wants every outcome.
func TestObserver_EV16_SDKTakesEveryOutcome(t *testing.T) {
	obs, _ := newObserver(t)
	bound := observe.Bind(obs, observe.Breaker, "db")
	for _, k := range []observe.Kind{observe.Success, observe.Failure, observe.Ignored, observe.Rejected, observe.Transition} {
		require.True(t, observe.Wants(bound, k), k.String())
	}
}

// The state gauge reads what Breaker.State reports: an open breaker whose
// cool-down has ended is half-open (it lets the next call through as a
// probe) though it reports the transition only when that call arrives;
// the transition is counted once, as of the cool-down's end. A cool-down
// that lasts until a reset stays open.
func TestObserver_EV17_StateGaugeHalfOpenOnceTheCoolDownEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs, reader := newObserver(t)
		b, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 10 * time.Second, Observer: obs})
		require.NoError(t, err)
		forever, err := circuitbreaker.New(circuitbreaker.Config{Name: "stuck", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: rampart.Forever, Observer: obs})
		require.NoError(t, err)
		gauge := func(name string) (in map[string]float64, opened float64) {
			points, _ := collect(t, reader)
			in = map[string]float64{}
			for _, st := range []string{"closed", "open", "half-open"} {
				in[st] = points[point("rampart.breaker.state", name, "rampart.breaker.state="+st)]
			}
			return in, points[point("rampart.breaker.transitions", name, "rampart.breaker.from=open", "rampart.breaker.to=half-open")]
		}
		for _, br := range []*circuitbreaker.Breaker{b, forever} {
			p, err := br.TryAcquire()
			require.NoError(t, err)
			p.Failure(errors.New("down"))
		}

		time.Sleep(10*time.Second - time.Nanosecond)
		require.Equal(t, circuitbreaker.Open, b.State().State)
		in, opened := gauge("db")
		require.Equal(t, map[string]float64{"closed": 0, "open": 1, "half-open": 0}, in, "in the cool-down")
		require.Equal(t, 0.0, opened)

		time.Sleep(time.Nanosecond)
		require.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		in, opened = gauge("db")
		require.Equal(t, map[string]float64{"closed": 0, "open": 0, "half-open": 1}, in, "the cool-down has ended, no call yet")
		require.Equal(t, 1.0, opened)
		in, _ = gauge("stuck")
		require.Equal(t, map[string]float64{"closed": 0, "open": 1, "half-open": 0}, in, "a cool-down that never ends")
		require.Equal(t, circuitbreaker.Open, forever.State().State)

		time.Sleep(5 * time.Second)
		p, err := b.TryAcquire() // the breaker reports its transition now
		require.NoError(t, err)
		in, opened = gauge("db")
		require.Equal(t, map[string]float64{"closed": 0, "open": 0, "half-open": 1}, in)
		require.Equal(t, 1.0, opened, "counted once")
		p.Success()
		in, opened = gauge("db")
		require.Equal(t, map[string]float64{"closed": 1, "open": 0, "half-open": 0}, in)
		require.Equal(t, 1.0, opened)

		points, _ := collect(t, reader)
		require.Equal(t, 10.0, points[point("rampart.breaker.state.time", "db", "rampart.breaker.state=open")])
		require.Equal(t, 5.0, points[point("rampart.breaker.state.time", "db", "rampart.breaker.state=half-open")])
		runtime.KeepAlive(forever)
	})
}

// An Open whose end the fleet's record moves (Breaker.ApplyRemote over an
// Open: a replica of a shared breaker that lost the claim of the HalfOpen
// round stays open while the winner probes) is counted open until the new
// end, as Breaker.State says, then half-open. It used to be counted
// half-open from the end the Open began with: on every replica but the
// round's claimant, through every shared HalfOpen round, the gauge said
// half-open while the breaker refused every call.
func TestObserver_EV17_AnOpenWhoseEndTheFleetMovedStaysOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs, reader := newObserver(t)
		b, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: obs})
		require.NoError(t, err)
		state := func() map[string]float64 {
			points, _ := collect(t, reader)
			in := map[string]float64{}
			for _, st := range []string{"closed", "open", "half-open"} {
				in[st] = points[point("rampart.breaker.state", "db", "rampart.breaker.state="+st)]
			}
			return in
		}
		_, err = b.ApplyRemote(circuitbreaker.Open, time.Second, errors.New("down"))
		require.NoError(t, err)
		time.Sleep(time.Second / 2)
		_, err = b.ApplyRemote(circuitbreaker.Open, 5*time.Second, nil) // the claim lost: open while it holds
		require.NoError(t, err)
		time.Sleep(time.Second)
		require.Equal(t, circuitbreaker.Open, b.State().State)
		require.Equal(t, map[string]float64{"closed": 0, "open": 1, "half-open": 0}, state(), "past the first end")
		time.Sleep(4 * time.Second)
		require.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		require.Equal(t, map[string]float64{"closed": 0, "open": 0, "half-open": 1}, state(), "past the new end")
		points, _ := collect(t, reader)
		require.Equal(t, 1.0, points[point("rampart.breaker.transitions", "db", "rampart.breaker.from=open", "rampart.breaker.to=half-open")])
		require.Equal(t, 0.0, points[point("rampart.breaker.transitions", "db", "rampart.breaker.from=open", "rampart.breaker.to=open")], "no transition")
		require.Equal(t, 5.5, points[point("rampart.breaker.state.time", "db", "rampart.breaker.state=open")])

		// The round granted to this replica (ApplyRemote HalfOpen): the
		// Open ends at once, and the breaker is half-open from then.
		_, err = b.ApplyRemote(circuitbreaker.Open, time.Minute, nil)
		require.NoError(t, err)
		require.Equal(t, map[string]float64{"closed": 0, "open": 1, "half-open": 0}, state())
		_, err = b.ApplyRemote(circuitbreaker.HalfOpen, 0, nil)
		require.NoError(t, err)
		require.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		require.Equal(t, map[string]float64{"closed": 0, "open": 0, "half-open": 1}, state(), "granted the round")
	})
}

// A transition to open that gives no cool-down (an Immediate one, or an
// event made by hand) is counted open until the next transition.
func TestObserver_EV17_NoCoolDownGivenStaysOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs, reader := newObserver(t)
		obs.Observe(context.Background(), observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "closed", To: "open"})
		time.Sleep(time.Hour)
		points, _ := collect(t, reader)
		require.Equal(t, 1.0, points[point("rampart.breaker.state", "db", "rampart.breaker.state=open")])
		require.Equal(t, 0.0, points[point("rampart.breaker.state", "db", "rampart.breaker.state=half-open")])
		obs.Observe(context.Background(), observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "open", To: "half-open"})
		points, _ = collect(t, reader)
		require.Equal(t, 0.0, points[point("rampart.breaker.state", "db", "rampart.breaker.state=open")])
		require.Equal(t, 1.0, points[point("rampart.breaker.state", "db", "rampart.breaker.state=half-open")])
		require.Equal(t, 1.0, points[point("rampart.breaker.transitions", "db", "rampart.breaker.from=open", "rampart.breaker.to=half-open")])
	})
}

// Two Observers on one MeterProvider (a library's and the program's, say)
// register the same instruments twice, and each has a breaker named "db":
// one open, one closed. The SDK sums what two callbacks observe of a sum,
// but keeps one of the values of a gauge, so a state gauge read one
// breaker in one state, either one, and an alert on it could miss the
// open one. The state is a count of breakers, summed: two breakers, one
// open and one closed, whatever the order of the callbacks. The same
// holds for the SDK's overflow point past its cardinality limit.
func TestObserver_EV14_TwoObserversOnOneProviderAddUp(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var brs []*circuitbreaker.Breaker
	for range 2 {
		obs, err := rampartotel.New(rampartotel.Config{MeterProvider: mp})
		require.NoError(t, err)
		br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour, Observer: obs})
		require.NoError(t, err)
		brs = append(brs, br)
	}
	_, _ = circuitbreaker.Run(context.Background(), brs[0], func(context.Context) (int, error) { return 0, errors.New("down") })
	for range 3 {
		_, _ = circuitbreaker.Run(context.Background(), brs[1], func(context.Context) (int, error) { return 0, nil })
	}
	points, _ := collect(t, reader)
	state := func(s string) float64 {
		return points["rampart.breaker.state{rampart.breaker.state="+s+",rampart.layer=circuitbreaker,rampart.name=db}"]
	}
	require.Equal(t, []float64{1, 1, 0}, []float64{state("closed"), state("open"), state("half-open")})
	calls := func(o string) float64 {
		return points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome="+o+"}"]
	}
	require.Equal(t, []float64{3, 1}, []float64{calls("success"), calls("failure")})
}

// A tenant's breaker that a Group drops when it goes idle leaves the
// live page and the state metric at the same time, through the same
// events, and the calls it made stay in the group's totals (the counters
// never go back, which Prometheus would read as a reset): after tenant a
// (open, 2 failures and 1 rejected call) idles out and tenant b comes, the
// page lists b alone and the metrics say b (and the group's overflow
// breaker) closed, none open, 2 failures, 1 rejection, 1 success.
func TestObserver_EV14_DroppedTenantLeavesPageAndGaugeTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs, reader := newObserver(t)
		reg, err := inspect.New(inspect.Config{})
		require.NoError(t, err)
		g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{IdleTimeout: time.Minute,
			Breaker: circuitbreaker.Config{Name: "tenants", Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Second, Observer: observe.Join(obs, reg.Observer())}})
		require.NoError(t, err)
		inspect.AddGroup(reg, "tenants", g)
		call := func(key string, err error) {
			_, _ = circuitbreaker.Run(context.Background(), g.Breaker(key), func(context.Context) (int, error) { return 0, err })
		}
		call("a", errors.New("down"))
		call("a", errors.New("down"))
		call("a", nil) // rejected: a is open
		st := reg.Status(context.Background())
		require.Len(t, st.Groups, 1)
		require.Len(t, st.Groups[0].Breakers, 1)
		require.Equal(t, "open", st.Groups[0].Breakers[0].State)

		time.Sleep(2 * time.Minute) // a's cool-down ended long ago, unused since
		call("b", nil)
		st = reg.Status(context.Background())
		var keys []string
		for _, b := range st.Groups[0].Breakers {
			keys = append(keys, b.Key+"="+b.State)
		}
		require.Equal(t, []string{"b=closed"}, keys)
		points, _ := collect(t, reader)
		state := func(s string) float64 {
			return points[point("rampart.breaker.state", "tenants", "rampart.breaker.state="+s)]
		}
		require.Equal(t, []float64{2, 0, 0}, []float64{state("closed"), state("open"), state("half-open")}, "b and the group's overflow breaker")
		calls := func(o string) float64 {
			return points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=tenants,rampart.outcome="+o+"}"]
		}
		require.Equal(t, []float64{1, 2, 1}, []float64{calls("success"), calls("failure"), calls("rejected")})
	})
}
