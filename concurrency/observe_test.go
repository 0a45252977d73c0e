package concurrency_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

// sleeper is a service that takes as long as its request says.
var sleeper = rampart.ServiceFunc[time.Duration, string](func(_ context.Context, d time.Duration) (string, error) {
	time.Sleep(d)
	return "ok", nil
})

func TestConcurrency_EV6_RefusedAndQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, mode := range []concurrency.Mode{concurrency.Wait, concurrency.Refuse} {
			var rec observetest.Recorder
			lim, err := concurrency.New(1)
			require.NoError(t, err)
			svc, err := wrap.Service(sleeper, concurrency.NewLayer, concurrency.Config{Limiter: lim, Mode: mode, Name: "db", Observer: &rec})
			require.NoError(t, err)

			go svc.Call(t.Context(), 2*time.Second) // holds the slot for two seconds
			synctest.Wait()
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			_, err2 := svc.Call(ctx, 0)
			cancel()
			_, err = svc.Call(t.Context(), 0)
			time.Sleep(3 * time.Second)
			_, err3 := svc.Call(t.Context(), 0) // a free slot: nothing to report
			require.NoError(t, err3)

			switch mode {
			case concurrency.Wait:
				require.NoError(t, err)
				require.ErrorIs(t, err2, context.DeadlineExceeded)
				require.Equal(t, []observe.Event{
					{Source: observe.Concurrency, Name: "db", Kind: observe.Refused, Duration: 300 * time.Millisecond, Err: err2},
					{Source: observe.Concurrency, Name: "db", Kind: observe.Queued, Duration: 1700 * time.Millisecond},
				}, rec.Events())
			case concurrency.Refuse:
				require.ErrorIs(t, err, concurrency.ErrLimited)
				require.ErrorIs(t, err2, concurrency.ErrLimited)
				refused := observe.Event{Source: observe.Concurrency, Name: "db", Kind: observe.Refused, Err: err}
				require.Equal(t, []observe.Event{refused, refused}, rec.Events())
			}
		}
	})
}

func TestConcurrency_EV6_AdaptiveRefusedAndQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: 1, MaxLimit: 1, MaxWaiting: 1})
		require.NoError(t, err)
		svc, err := wrap.Service(sleeper, concurrency.NewLayer, concurrency.Config{Limiter: lim, Name: "adaptive", Observer: &rec})
		require.NoError(t, err)

		go svc.Call(t.Context(), 2*time.Second) // holds the only slot
		synctest.Wait()
		go svc.Call(t.Context(), 0) // waits: the one waiter allowed
		synctest.Wait()
		_, errFull := svc.Call(t.Context(), 0) // refused at once: MaxWaiting
		require.ErrorIs(t, errFull, concurrency.ErrLimited)
		time.Sleep(3 * time.Second)

		require.Equal(t, []observe.Event{
			{Source: observe.Concurrency, Name: "adaptive", Kind: observe.Refused, Err: errFull},
			{Source: observe.Concurrency, Name: "adaptive", Kind: observe.Queued, Duration: 2 * time.Second},
		}, rec.Events())
	})
}
