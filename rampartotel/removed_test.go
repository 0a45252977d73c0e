package rampartotel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
)

// A breaker a Group drops leaves the metrics: its state and its call
// counts, so that the series of a group's keys do not pile up.
func TestObserver_EV14_BreakerDroppedByAGroupIsForgotten(t *testing.T) {
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
		require.Equal(t, 1.0, points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=g/a,rampart.outcome=success}"])
		require.Equal(t, 1.0, points["rampart.breaker.state{rampart.breaker.state=closed,rampart.layer=circuitbreaker,rampart.name=g/a}"])

		time.Sleep(45 * time.Second) // a idle for 75s, b for 45s
		require.Equal(t, 1, g.Len())
		points, _ = collect(t, reader)
		names := map[string]bool{}
		for k := range points {
			names[k] = true
		}
		want := map[string]bool{}
		for _, name := range []string{"g/(overflow)", "g/b"} {
			for _, outcome := range []string{"failure", "ignored", "rejected", "success"} {
				want["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name="+name+",rampart.outcome="+outcome+"}"] = true
			}
			for _, state := range []string{"closed", "open", "half-open", "forced-open", "forced-closed"} {
				want["rampart.breaker.state{rampart.breaker.state="+state+",rampart.layer=circuitbreaker,rampart.name="+name+"}"] = true
			}
		}
		require.Equal(t, want, names, "g/a is gone; a breaker appears when it is created")
	})
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
