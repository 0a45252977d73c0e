package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/ratelimit"
)

// admissions returns a service that records when each request reached it,
// measured from start.
func admissions(start time.Time) (rampart.Service[string, string], func() map[string]time.Duration) {
	var mu sync.Mutex
	at := map[string]time.Duration{}
	svc := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		at[req] = time.Since(start)
		return req, nil
	})
	return svc, func() map[string]time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return at
	}
}

// The scenario: 1 token/s, burst 1. A takes the token at 0; B and
// D wait; B cancels at 0.5s; E arrives at 1s with 2s to spare. B's token
// goes to D, due at 1s, and E gets the next one at 2s: three tokens granted
// in [0, 2s], the rate the limiter allows.
func TestLayer_LM1_CancelledWaiterHandsTokenToNext(t *testing.T) {
	for name, layer := range map[string]func(t *testing.T) rampart.Layer[string, string]{
		"NewLayer": func(t *testing.T) rampart.Layer[string, string] {
			l, err := ratelimit.NewLayer[string, string](ratelimit.Config{Limiter: rate.NewLimiter(1, 1), Mode: ratelimit.Wait})
			require.NoError(t, err)
			return l
		},
		"NewKeyedLayer": func(t *testing.T) rampart.Layer[string, string] {
			k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 1, Burst: 1})
			require.NoError(t, err)
			l, err := ratelimit.NewKeyedLayer[string, string](k, func(string) string { return "one key" }, ratelimit.Wait)
			require.NoError(t, err)
			return l
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				inner, admitted := admissions(start)
				svc := layer(t).Wrap(inner)

				_, err := svc.Call(t.Context(), "A")
				require.NoError(t, err)

				var wg sync.WaitGroup
				ctxB, cancelB := context.WithCancel(t.Context())
				time.AfterFunc(500*time.Millisecond, cancelB)
				var errB error
				var cancelledAt time.Duration
				wg.Go(func() {
					_, errB = svc.Call(ctxB, "B")
					cancelledAt = time.Since(start)
				})
				synctest.Wait()
				wg.Go(func() {
					_, err := svc.Call(t.Context(), "D")
					assert.NoError(t, err)
				})
				synctest.Wait()

				time.Sleep(time.Second)
				ctxE, cancelE := context.WithTimeout(t.Context(), 2*time.Second)
				defer cancelE()
				_, err = svc.Call(ctxE, "E")
				assert.NoError(t, err)
				wg.Wait()

				require.ErrorIs(t, errB, context.Canceled)
				assert.Equal(t, 500*time.Millisecond, cancelledAt)
				assert.Equal(t, map[string]time.Duration{"A": 0, "D": time.Second, "E": 2 * time.Second}, admitted())
			})
		})
	}
}

// A call that joins the line behind others is refused at once when the
// token it would get, once every waiter ahead has taken its own, is due at
// or after its deadline; a waiter behind it keeps its place.
func TestLayer_LM2_QueuedCallPastDeadlineRefusedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		inner, admitted := admissions(start)
		layer, err := ratelimit.NewLayer[string, string](ratelimit.Config{Limiter: rate.NewLimiter(10, 1), Mode: ratelimit.Wait})
		require.NoError(t, err)
		svc := layer.Wrap(inner)
		_, err = svc.Call(t.Context(), "A")
		require.NoError(t, err)

		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := svc.Call(t.Context(), "B") // due at 100ms
			assert.NoError(t, err)
		})
		synctest.Wait()

		// C would be due at 200ms: exactly at its deadline, too late.
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err = svc.Call(ctx, "C")
		assert.Equal(t, time.Duration(0), time.Since(start), "must not wait for a token it cannot use")
		requireLimited(t, err, 200*time.Millisecond, true)

		wg.Go(func() {
			_, err := svc.Call(t.Context(), "D") // C took no place: due at 200ms
			assert.NoError(t, err)
		})
		wg.Wait()
		assert.Equal(t, map[string]time.Duration{"A": 0, "B": 100 * time.Millisecond, "D": 200 * time.Millisecond}, admitted())
	})
}

// Many waiters, a third of which give up at various times: every call
// ends, the waiters that stay are admitted no faster than the limiter
// allows, and the tokens given back are used, so the last admission comes
// exactly when the admitted count says it should.
func TestLayer_LM1_HammerWithCancellations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers = 30
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		svc := rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
			return req, nil
		})
		layer, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: rate.NewLimiter(10, 1), Mode: ratelimit.Wait})
		require.NoError(t, err)
		limited := layer.Wrap(svc)

		var cancelled atomic.Int64
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				ctx := t.Context()
				if i%3 == 1 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					time.AfterFunc(time.Duration(i)*37*time.Millisecond, cancel)
				}
				if _, err := limited.Call(ctx, i); err != nil {
					assert.ErrorIs(t, err, context.Canceled)
					cancelled.Add(1)
				}
			})
		}
		wg.Wait()

		admitted := len(at)
		assert.Equal(t, workers, admitted+int(cancelled.Load()))
		// x/time/rate keeps tokens as a float64, so a token given back and
		// taken again may come due a nanosecond off: times are compared to
		// the microsecond.
		for n, d := range at {
			assert.GreaterOrEqual(t, d.Round(time.Microsecond), time.Duration(n)*100*time.Millisecond, "admission %d", n)
		}
		assert.Equal(t, time.Duration(admitted-1)*100*time.Millisecond, at[admitted-1].Round(time.Microsecond), "no token given back was lost")
	})
}
