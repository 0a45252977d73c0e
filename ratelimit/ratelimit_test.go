package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/ratelimit"
)

var modes = map[string]ratelimit.Mode{"Wait": ratelimit.Wait, "Refuse": ratelimit.Refuse}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo returns a service that answers req and counts its calls.
func echo(calls *atomic.Int64) rampart.Service[int, int] {
	return rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		calls.Add(1)
		return req, nil
	})
}

func build(t testing.TB, lim *rate.Limiter, mode ratelimit.Mode, inner rampart.Service[int, int]) rampart.Service[int, int] {
	t.Helper()
	layer, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: lim, Mode: mode})
	require.NoError(t, err)
	return layer.Wrap(inner)
}

func requireLimited(t *testing.T, err error, retryAfter time.Duration, pastDeadline bool) {
	t.Helper()
	require.ErrorIs(t, err, ratelimit.ErrLimited)
	var le *ratelimit.LimitedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, retryAfter, le.Wait)
	assert.Equal(t, pastDeadline, le.PastDeadline)
	var rd rampart.Hint
	require.ErrorAs(t, err, &rd)
	assert.Equal(t, retryAfter, rd.RetryAfter())
}

func TestNewLayer_RejectsBadArguments(t *testing.T) {
	_, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: nil, Mode: ratelimit.Wait})
	assert.EqualError(t, err, "ratelimit: limiter must not be nil")
	_, err = ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: rate.NewLimiter(1, 1), Mode: ratelimit.Mode(-1)})
	assert.EqualError(t, err, "ratelimit: mode must be Wait or Refuse, got -1")
}

func TestLayer_Reject_RetryAfterIsTimeToNextToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := rate.NewLimiter(10, 2) // a token every 100ms, burst 2
		var calls atomic.Int64
		svc := build(t, lim, ratelimit.Refuse, echo(&calls))

		for i := range 2 {
			resp, err := svc.Call(t.Context(), i)
			require.NoError(t, err)
			assert.Equal(t, i, resp)
		}
		resp, err := svc.Call(t.Context(), 2)
		assert.Zero(t, resp)
		requireLimited(t, err, 100*time.Millisecond, false)
		assert.EqualError(t, err, "ratelimit: limited (retry after 100ms)")
		assert.Equal(t, int64(2), calls.Load(), "a refused call must not reach the inner service")
		assert.Equal(t, 0.0, lim.Tokens(), "a refusal takes no token")

		time.Sleep(40 * time.Millisecond)
		_, err = svc.Call(t.Context(), 3)
		requireLimited(t, err, 60*time.Millisecond, false)

		time.Sleep(60 * time.Millisecond)
		_, err = svc.Call(t.Context(), 4)
		require.NoError(t, err)
		assert.Equal(t, int64(3), calls.Load())
	})
}

func TestLayer_Wait_QueuesInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := rate.NewLimiter(10, 1)
		var calls atomic.Int64
		svc := build(t, lim, ratelimit.Wait, echo(&calls))
		start := time.Now()

		var mu sync.Mutex
		var done []time.Duration
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				_, err := svc.Call(t.Context(), i)
				assert.NoError(t, err)
				mu.Lock()
				done = append(done, time.Since(start))
				mu.Unlock()
			})
			synctest.Wait() // reserve in order 0, 1, 2
		}
		wg.Wait()
		assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}, done)
		assert.Equal(t, int64(3), calls.Load())
	})
}

func TestLayer_Wait_RefusesAtOnceWhenTokenIsPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := rate.NewLimiter(10, 1)
		var calls atomic.Int64
		svc := build(t, lim, ratelimit.Wait, echo(&calls))
		_, err := svc.Call(t.Context(), 0)
		require.NoError(t, err)

		// The next token is due in exactly 100ms: at the deadline, too late.
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = svc.Call(ctx, 1)
		assert.Equal(t, time.Duration(0), time.Since(start), "must not wait for a token it cannot use")
		requireLimited(t, err, 100*time.Millisecond, true)
		assert.EqualError(t, err, "ratelimit: limited: next token in 100ms, at or past the context deadline")
		assert.NotErrorIs(t, err, context.DeadlineExceeded)

		// The refusal gave the reservation back: with 150ms left the call
		// waits the same 100ms, not 200ms.
		ctx2, cancel2 := context.WithTimeout(t.Context(), 150*time.Millisecond)
		defer cancel2()
		_, err = svc.Call(ctx2, 2)
		require.NoError(t, err)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		assert.Equal(t, int64(2), calls.Load())
	})
}

func TestLayer_Wait_CancelledWhileWaitingGivesTokenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := rate.NewLimiter(10, 1)
		var calls atomic.Int64
		svc := build(t, lim, ratelimit.Wait, echo(&calls))
		start := time.Now()
		_, err := svc.Call(t.Context(), 0)
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(30*time.Millisecond, cancel)
		_, err = svc.Call(ctx, 1)
		require.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, ratelimit.ErrLimited)
		assert.EqualError(t, err, "ratelimit: waiting for a token: context canceled")
		assert.Equal(t, 30*time.Millisecond, time.Since(start))

		// The cancelled reservation was returned, so the next caller gets
		// the token due at 100ms rather than one at 200ms.
		_, err = svc.Call(t.Context(), 2)
		require.NoError(t, err)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		assert.Equal(t, int64(2), calls.Load())
	})
}

func TestLayer_DoneContextTakesNoToken(t *testing.T) {
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim := rate.NewLimiter(10, 1)
				var calls atomic.Int64
				svc := build(t, lim, mode, echo(&calls))
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				_, err := svc.Call(ctx, 1)
				assert.Same(t, context.Canceled, err)
				assert.Zero(t, calls.Load())
				assert.Equal(t, 1.0, lim.Tokens())
			})
		})
	}
}

func TestLayer_RefusesAtOnceWhenNoTokenWillEverCome(t *testing.T) {
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int64
				svc := build(t, rate.NewLimiter(10, 0), mode, echo(&calls))
				_, err := svc.Call(t.Context(), 1)
				requireLimited(t, err, rate.InfDuration, false)
				assert.Zero(t, calls.Load(), "burst 0")

				zeroLimit := rate.NewLimiter(0, 1)
				svc = build(t, zeroLimit, mode, echo(&calls))
				_, err = svc.Call(t.Context(), 1)
				require.NoError(t, err, "the burst is spent first")
				start := time.Now()
				_, err = svc.Call(t.Context(), 2)
				requireLimited(t, err, rate.InfDuration, false)
				assert.Equal(t, time.Duration(0), time.Since(start))
				assert.Equal(t, int64(1), calls.Load(), "limit 0")
				assert.Equal(t, 0.0, zeroLimit.Tokens(), "the refused reservation was given back")
			})
		})
	}
}

func TestLayer_InnerErrorUnchanged(t *testing.T) {
	boom := errors.New("boom")
	svc := build(t, rate.NewLimiter(rate.Inf, 0), ratelimit.Refuse, rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		return 9, boom
	}))
	resp, err := svc.Call(t.Context(), 1)
	assert.Same(t, boom, err)
	assert.Equal(t, 9, resp)
}

func TestLayer_SharedLimiterBoundsAllServices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := rate.NewLimiter(10, 1)
		var calls atomic.Int64
		a := build(t, lim, ratelimit.Refuse, echo(&calls))
		b := build(t, lim, ratelimit.Refuse, echo(&calls))
		_, err := a.Call(t.Context(), 1)
		require.NoError(t, err)
		_, err = b.Call(t.Context(), 2)
		requireLimited(t, err, 100*time.Millisecond, false)
	})
}

// Under synctest no time passes while goroutines run, so exactly Burst
// calls get through however the goroutines interleave.
func TestLayer_Hammer(t *testing.T) {
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const burst, workers, perWorker = 5, 16, 50
				lim := rate.NewLimiter(10, burst)
				var calls, refused atomic.Int64
				svc := build(t, lim, mode, echo(&calls))
				// In Wait mode a deadline of 1ms refuses every token not free now.
				ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
				defer cancel()
				var wg sync.WaitGroup
				for range workers {
					wg.Go(func() {
						for i := range perWorker {
							_, err := svc.Call(ctx, i)
							if errors.Is(err, ratelimit.ErrLimited) {
								refused.Add(1)
							} else {
								assert.NoError(t, err)
							}
						}
					})
				}
				wg.Wait()
				assert.Equal(t, int64(burst), calls.Load())
				assert.Equal(t, int64(workers*perWorker-burst), refused.Load())
			})
		})
	}
}

func TestLayer_FreeTokenAllocatesNothing(t *testing.T) {
	var calls atomic.Int64
	for name, mode := range modes {
		svc := build(t, rate.NewLimiter(rate.Inf, 0), mode, echo(&calls))
		ctx := context.Background()
		assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, 1) }), name)
	}
}

func TestWrap(t *testing.T) {
	var calls atomic.Int64
	svc, err := wrap.Service(echo(&calls), ratelimit.NewLayer, ratelimit.Config{Limiter: rate.NewLimiter(rate.Inf, 0), Mode: ratelimit.Refuse})
	require.NoError(t, err)
	resp, err := svc.Call(t.Context(), 3)
	assert.NoError(t, err)
	assert.Equal(t, 3, resp)
	_, err = wrap.Service(echo(&calls), ratelimit.NewLayer, ratelimit.Config{Limiter: nil, Mode: ratelimit.Wait})
	assert.EqualError(t, err, "ratelimit: limiter must not be nil")
}

// Mode prints its name, and a value that is neither Wait nor Refuse by
// number.
func TestMode_String(t *testing.T) {
	assert.Equal(t, "Wait", ratelimit.Wait.String())
	assert.Equal(t, "Refuse", ratelimit.Refuse.String())
	assert.Equal(t, "Mode(7)", ratelimit.Mode(7).String())
}

// A refusal has the shape of concurrency's: RetryAfter, PastDeadline and
// RetryAfter.
func TestLimitedError_LM5_SameShapeAsConcurrency(t *testing.T) {
	r := ratelimit.LimitedError{Wait: time.Second, PastDeadline: true}
	c := concurrency.LimitedError(r)
	assert.Equal(t, r.RetryAfter(), c.RetryAfter())
}
