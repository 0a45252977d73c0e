package rampartotel_test

import (
	"context"
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
