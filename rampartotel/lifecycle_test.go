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
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
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

// Close stops the metrics and drops later events, of a breaker bound
// before it, of one created after it and of any other layer; a second
// Close does nothing.
func TestObserver_EV11_Close(t *testing.T) {
	obs, reader := newObserver(t)
	b, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: obs})
	require.NoError(t, err)
	p, _ := b.TryAcquire()
	p.Success()
	retrying := observe.Event{Source: observe.Retry, Name: "db", Kind: observe.Retrying, Attempt: 2}
	obs.Observe(context.Background(), retrying)
	points, _ := collect(t, reader)
	require.Equal(t, 1.0, points[point("rampart.breaker.calls", "db", "rampart.outcome=success")])
	require.Equal(t, 1.0, points["rampart.retry.retries{rampart.layer=retry,rampart.name=db,rampart.retry.reason=response}"])

	require.NoError(t, obs.Close())
	require.NoError(t, obs.Close())
	p, _ = b.TryAcquire()
	p.Success()
	late, err := circuitbreaker.New(circuitbreaker.Config{Name: "late", Observer: obs})
	require.NoError(t, err)
	p, _ = late.TryAcquire()
	p.Failure(errors.New("down"))
	obs.Observe(context.Background(), retrying)
	points, _ = collect(t, reader)
	require.Equal(t, map[string]float64{
		// The SDK keeps reporting what a synchronous instrument recorded
		// (cumulative sums), unchanged: the later retry was dropped.
		"rampart.retry.retries{rampart.layer=retry,rampart.name=db,rampart.retry.reason=response}": 1,
		"rampart.retry.delay{rampart.layer=retry,rampart.name=db}":                                 1,
		"rampart.retry.delay{rampart.layer=retry,rampart.name=db} sum":                             0,
	}, points, "no breaker series after Close: the callback is unregistered")
	runtime.KeepAlive(b)
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
