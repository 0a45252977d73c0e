package coalesce_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/coalesce"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

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
