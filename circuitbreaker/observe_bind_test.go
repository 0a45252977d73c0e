package circuitbreaker_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

// binder is an observe.Binder whose bound observers all record into one
// Recorder, and which notes each Bind.
type binder struct {
	unbound, bound observetest.Recorder
	binds          []string
}

func (b *binder) Observe(ctx context.Context, e observe.Event) { b.unbound.Observe(ctx, e) }

func (b *binder) Bind(source observe.Source, name string) observe.Observer {
	b.binds = append(b.binds, source.String()+" "+name)
	return &b.bound
}

func TestBreaker_EV13_NewBindsTheObserver(t *testing.T) {
	var obs binder
	b := newBreaker(t, circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1}, Observer: &obs})
	require.Equal(t, []string{"circuitbreaker db"}, obs.binds)
	errDown := errors.New("down")
	svc := wrap.Layer(rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
		if req == "down" {
			return "", errDown
		}
		return "ok", nil
	}), circuitbreaker.NewLayer, b, nil)
	_, _ = svc.Call(context.Background(), "ok")
	_, _ = svc.Call(context.Background(), "down")
	require.Equal(t, []observe.Event{
		{Source: observe.Breaker, Name: "db", Kind: observe.Success},
		{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "closed", To: "open", Err: errDown, Calls: 1, Failures: 1},
		{Source: observe.Breaker, Name: "db", Kind: observe.Failure, Err: errDown},
	}, obs.bound.Events())
	require.Empty(t, obs.unbound.Events())
}

// removed returns the names of the Removed events in rec, checking that
// they set no other field.
func removed(t *testing.T, rec *observetest.Recorder) []string {
	t.Helper()
	names := []string{}
	for _, e := range rec.Events() {
		if e.Kind == observe.Removed {
			require.Equal(t, observe.Event{Source: observe.Breaker, Name: e.Name, Kind: observe.Removed}, e)
			names = append(names, e.Name)
		}
	}
	return names
}

func TestGroup_EV14_ReportsEachDroppedBreakerAsRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		g := newGroup(t, circuitbreaker.GroupConfig{
			Breaker: circuitbreaker.Config{Name: "g", Observer: &rec}, MaxKeys: 2, IdleTimeout: time.Minute,
		})
		g.Breaker("a")
		g.Breaker("b")
		require.Empty(t, removed(t, &rec))

		time.Sleep(time.Minute)
		require.Zero(t, g.Len()) // looks: both idle
		require.Equal(t, []string{"g/a", "g/b"}, removed(t, &rec))

		rec.Reset()
		g.Breaker("c")
		g.Breaker("d")
		g.Breaker("e") // no room: the CLOCK hand drops one not used since it was looked at
		require.Len(t, removed(t, &rec), 1)
	})
}
