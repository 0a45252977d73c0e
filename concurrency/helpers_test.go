package concurrency_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
)

var modes = map[string]concurrency.Mode{"Wait": concurrency.Wait, "Refuse": concurrency.Refuse}

// blocking returns a service that blocks each call until release is closed
// or receives, counting calls.
func blocking(release <-chan struct{}, calls *atomic.Int64) rampart.Service[int, int] {
	return rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		calls.Add(1)
		<-release
		return req * 10, nil
	})
}

func build(t *testing.T, l *concurrency.Limiter, mode concurrency.Mode, inner rampart.Service[int, int]) rampart.Service[int, int] {
	t.Helper()
	layer, err := concurrency.NewLayer[int, int](concurrency.Config{Limiter: l, Mode: mode})
	require.NoError(t, err)
	return rampart.NewBuilder[int, int]().Layer(layer).Service(inner)
}

// buildBlocking returns a limiter of max slots and a service it limits in
// mode whose calls block until release is closed or receives, counted in calls.
func buildBlocking(t *testing.T, max int, mode concurrency.Mode) (*concurrency.Limiter, rampart.Service[int, int], chan struct{}, *atomic.Int64) {
	t.Helper()
	l, err := concurrency.New(max)
	require.NoError(t, err)
	release := make(chan struct{})
	calls := new(atomic.Int64)
	return l, build(t, l, mode, blocking(release, calls)), release, calls
}

// sleeper is a service that takes as long as its request says. It
// sleeps: use it only inside synctest.Test, where time is virtual.
var sleeper = rampart.ServiceFunc[time.Duration, string](func(_ context.Context, d time.Duration) (string, error) {
	time.Sleep(d)
	return "ok", nil
})
