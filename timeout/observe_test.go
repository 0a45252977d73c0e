package timeout_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/timeout"
)

func TestTimeout_EV4_Fired(t *testing.T) {
	for _, abandon := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "abandon"}[abandon], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec observetest.Recorder
				slow := rampart.ServiceFunc[time.Duration, string](func(ctx context.Context, d time.Duration) (string, error) {
					select {
					case <-time.After(d):
						return "done", nil
					case <-ctx.Done():
						return "", context.Cause(ctx)
					}
				})
				svc, err := wrap.Service(slow, timeout.NewLayer, timeout.Config[time.Duration, string]{
					Timeout: time.Second, Abandon: abandon, Name: "db", Observer: &rec,
				})
				require.NoError(t, err)

				_, err = svc.Call(t.Context(), 500*time.Millisecond)
				require.NoError(t, err)
				require.Empty(t, rec.Events())

				_, err = svc.Call(t.Context(), 2*time.Second)
				require.True(t, errors.Is(err, timeout.ErrTimeout))
				require.Equal(t, []observe.Event{
					{Source: observe.Timeout, Name: "db", Kind: observe.TimeoutFired, Duration: time.Second},
				}, rec.Events())

				// The caller's own deadline is not the layer's timeout.
				rec.Reset()
				ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
				defer cancel()
				_, _ = svc.Call(ctx, 2*time.Second)
				require.Len(t, rec.Events(), 1) // the layer's deadline comes first
				ctx2, cancel2 := context.WithTimeout(t.Context(), 100*time.Millisecond)
				defer cancel2()
				_, _ = svc.Call(ctx2, 2*time.Second)
				require.Len(t, rec.Events(), 1)
			})
		})
	}
}
