package concurrency_test

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

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

func TestNewLayer_RejectsBadArguments(t *testing.T) {
	l, err := concurrency.New(1)
	require.NoError(t, err)

	_, err = concurrency.NewLayer[int, int](concurrency.Config{Limiter: nil, Mode: concurrency.Wait})
	assert.EqualError(t, err, "concurrency: limiter must not be nil")
	_, err = concurrency.NewLayer[int, int](concurrency.Config{Limiter: l, Mode: concurrency.Mode(7)})
	assert.EqualError(t, err, "concurrency: mode must be Wait or Refuse, got Mode(7)")
}

func TestLayer_Reject_RefusesWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, svc, release, calls := buildBlocking(t, 2, concurrency.Refuse)

		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				resp, err := svc.Call(t.Context(), i)
				assert.NoError(t, err)
				assert.Equal(t, i*10, resp)
			})
		}
		synctest.Wait()
		assert.Equal(t, 2, l.InFlight())
		assert.False(t, l.Ready())

		resp, err := svc.Call(t.Context(), 5)
		assert.Zero(t, resp)
		require.ErrorIs(t, err, concurrency.ErrLimited)
		var le *concurrency.LimitedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, concurrency.LimitedError{}, *le, "a Limiter knows no retry delay")
		assert.Zero(t, le.RetryAfter())
		assert.EqualError(t, err, "concurrency: limit reached")
		assert.Equal(t, int64(2), calls.Load(), "a refused call must not reach the inner service")

		release <- struct{}{}
		synctest.Wait()
		assert.Equal(t, 1, l.InFlight())
		assert.True(t, l.Ready())

		close(release)
		resp, err = svc.Call(t.Context(), 6)
		assert.NoError(t, err)
		assert.Equal(t, 60, resp)
		wg.Wait()
		assert.Equal(t, 0, l.InFlight())
	})
}

func TestLayer_Wait_GetsSlotWhenOneFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.New(1)
		require.NoError(t, err)
		svc := build(t, l, concurrency.Wait, rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
			time.Sleep(50 * time.Millisecond)
			return req, nil
		}))

		start := time.Now()
		go func() { _, _ = svc.Call(t.Context(), 1) }()
		synctest.Wait()

		resp, err := svc.Call(t.Context(), 2)
		require.NoError(t, err)
		assert.Equal(t, 2, resp)
		// 50ms waiting for the first call's slot, then 50ms of its own.
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
	})
}

func TestLayer_Wait_BoundedByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, svc, release, calls := buildBlocking(t, 1, concurrency.Wait)
		go func() { _, _ = svc.Call(t.Context(), 1) }()
		synctest.Wait()

		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := svc.Call(ctx, 2)
		assert.Equal(t, 30*time.Millisecond, time.Since(start))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, concurrency.ErrLimited)
		assert.EqualError(t, err, "concurrency: waiting for a slot: context deadline exceeded")
		assert.Equal(t, int64(1), calls.Load())
		assert.Equal(t, 1, l.InFlight())
		close(release)
	})
}

func TestLayer_DoneContextTakesNoSlot(t *testing.T) {
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			l, err := concurrency.New(1)
			require.NoError(t, err)
			var calls atomic.Int64
			svc := build(t, l, mode, rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
				calls.Add(1)
				return req, nil
			}))
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			_, err = svc.Call(ctx, 1)
			require.ErrorIs(t, err, context.Canceled)
			assert.Zero(t, calls.Load())
			assert.Equal(t, 0, l.InFlight())
		})
	}
}

func TestLayer_InnerErrorUnchangedAndSlotFreed(t *testing.T) {
	l, err := concurrency.New(1)
	require.NoError(t, err)
	boom := errors.New("boom")
	svc := build(t, l, concurrency.Refuse, rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		return 7, boom
	}))
	resp, err := svc.Call(t.Context(), 1)
	assert.Same(t, boom, err)
	assert.Equal(t, 7, resp)
	assert.Equal(t, 0, l.InFlight())
}

func TestLayer_PanicFreesSlot(t *testing.T) {
	l, err := concurrency.New(1)
	require.NoError(t, err)
	svc := build(t, l, concurrency.Refuse, rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		panic("inner panic")
	}))
	assert.PanicsWithValue(t, "inner panic", func() { _, _ = svc.Call(t.Context(), 1) })
	assert.Equal(t, 0, l.InFlight())
	assert.True(t, l.Ready())
}

func TestLayer_SharedLimiterBoundsAllServices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.New(1)
		require.NoError(t, err)
		release := make(chan struct{})
		var calls atomic.Int64
		a := build(t, l, concurrency.Refuse, blocking(release, &calls))
		b := build(t, l, concurrency.Refuse, blocking(release, &calls))
		go func() { _, _ = a.Call(t.Context(), 1) }()
		synctest.Wait()
		_, err = b.Call(t.Context(), 2)
		assert.ErrorIs(t, err, concurrency.ErrLimited)
		close(release)
	})
}

func TestLayer_Hammer(t *testing.T) {
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			const max, workers, perWorker = 3, 32, 200
			l, err := concurrency.New(max)
			require.NoError(t, err)
			var running, peak, served, refused atomic.Int64
			svc := build(t, l, mode, rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				if in := l.InFlight(); in < 1 || in > max {
					t.Errorf("InFlight() = %d during a call, want 1..%d", in, max)
				}
				running.Add(-1)
				return req, nil
			}))
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for i := range perWorker {
						resp, err := svc.Call(context.Background(), i)
						switch {
						case err == nil && resp == i:
							served.Add(1)
						case errors.Is(err, concurrency.ErrLimited):
							refused.Add(1)
						default:
							t.Errorf("Call(%d) = %d, %v", i, resp, err)
						}
					}
				})
			}
			wg.Wait()
			assert.LessOrEqual(t, peak.Load(), int64(max))
			assert.Equal(t, int64(workers*perWorker), served.Load()+refused.Load(), "every call is served or refused")
			if mode == concurrency.Wait {
				assert.Zero(t, refused.Load())
			}
			assert.Equal(t, 0, l.InFlight())
		})
	}
}

func TestLayer_ZeroAllocs(t *testing.T) {
	l, err := concurrency.New(1)
	require.NoError(t, err)
	ok := rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) { return req, nil })
	ctx := context.Background()
	for name, mode := range modes {
		svc := build(t, l, mode, ok)
		assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, 1) }), "%s: call with a free slot", name)
	}

	full := build(t, l, concurrency.Refuse, rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		svc := build(t, l, concurrency.Refuse, ok)
		assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, 1) }), "refusal")
		return req, nil
	}))
	_, err = full.Call(ctx, 1)
	require.NoError(t, err)
}

func TestNewLayer_Wraps(t *testing.T) {
	l, err := concurrency.New(1)
	require.NoError(t, err)
	svc, err := wrap.Service(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		return l.InFlight(), nil
	}), concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: concurrency.Wait})
	require.NoError(t, err)
	resp, err := svc.Call(t.Context(), 0)
	assert.NoError(t, err)
	assert.Equal(t, 1, resp, "the call runs in a slot")
	_, err = concurrency.NewLayer[int, int](concurrency.Config{})
	assert.EqualError(t, err, "concurrency: limiter must not be nil")
}

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req, nil })
	l, err := concurrency.New(1)
	require.NoError(t, err)
	nilcheck.Run(t, 1, []nilcheck.Case[int, int]{
		{
			Name: "nil Limiter",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(ok, concurrency.NewLayer, concurrency.Config{Limiter: nil, Mode: concurrency.Wait})
			},
			Want: "concurrency: limiter must not be nil",
		},
		{
			Name: "zero Limiter",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(ok, concurrency.NewLayer, concurrency.Config{Limiter: &concurrency.Limiter{}, Mode: concurrency.Wait})
			},
			Want: "concurrency: limiter must be made by New, got a zero Limiter",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[int, int], error) {
				layer, err := concurrency.NewLayer[int, int](concurrency.Config{Limiter: l, Mode: concurrency.Wait})
				require.NoError(t, err)
				return layer.Wrap(nil), nil
			},
			Want:       "concurrency: Wrap: rampart: nil service",
			NilService: true,
		},
	})
	assert.Zero(t, l.InFlight())
}

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

// Acquire holds its slot until release, refuses as the layer does (with the
// same event), and a second release gives nothing more back.
func TestAcquire_LM4_HoldsTheSlotUntilRelease(t *testing.T) {
	lim, err := concurrency.New(1)
	require.NoError(t, err)
	var obs observetest.Recorder
	cfg := concurrency.Config{Limiter: lim, Mode: concurrency.Refuse, Name: "stream", Observer: &obs}
	release, err := concurrency.Acquire(t.Context(), cfg)
	require.NoError(t, err)
	assert.Equal(t, 1, lim.InFlight())

	_, err = concurrency.Acquire(t.Context(), cfg)
	require.ErrorIs(t, err, concurrency.ErrLimited)
	events := obs.Events()
	require.Len(t, events, 1)
	assert.Equal(t, observe.Event{Source: observe.Concurrency, Name: "stream", Kind: observe.Refused, Err: err}, events[0])

	release()
	release()
	assert.Equal(t, 0, lim.InFlight())
	again, err := concurrency.Acquire(t.Context(), cfg)
	require.NoError(t, err)
	_, err = concurrency.Acquire(t.Context(), cfg)
	require.ErrorIs(t, err, concurrency.ErrLimited, "the second release freed no other slot")
	again()
	assert.Equal(t, 0, lim.InFlight())
}

// Acquire rejects what NewLayer rejects, with the same errors, and takes no
// slot for a context already done.
func TestAcquire_LM4_BadConfigAndDoneContext(t *testing.T) {
	_, err := concurrency.Acquire(t.Context(), concurrency.Config{})
	require.EqualError(t, err, "concurrency: limiter must not be nil")
	lim, err := concurrency.New(1)
	require.NoError(t, err)
	_, err = concurrency.Acquire(t.Context(), concurrency.Config{Limiter: lim, Mode: 7})
	require.EqualError(t, err, "concurrency: mode must be Wait or Refuse, got Mode(7)")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = concurrency.Acquire(ctx, concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, lim.InFlight())
}

// How long an AdaptiveLimiter's slot is held through Acquire is no latency
// sample: a second-long hold moves the layer's baseline to a second, and
// Acquire's leaves it unset.
func TestAcquire_LM6_HoldIsNoLatencySample(t *testing.T) {
	baseline := func(hold func(cfg concurrency.Config)) time.Duration {
		var got time.Duration
		synctest.Test(t, func(t *testing.T) {
			lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{})
			require.NoError(t, err)
			cfg := concurrency.Config{Limiter: lim, Mode: concurrency.Refuse}
			for range 100 {
				hold(cfg)
			}
			got = lim.Baseline()
		})
		return got
	}
	layer := baseline(func(cfg concurrency.Config) {
		l, err := concurrency.NewLayer[int, int](cfg)
		require.NoError(t, err)
		_, err = l.Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) {
			time.Sleep(time.Second)
			return 0, nil
		})).Call(t.Context(), 0)
		require.NoError(t, err)
	})
	acquired := baseline(func(cfg concurrency.Config) {
		release, err := concurrency.Acquire(t.Context(), cfg)
		require.NoError(t, err)
		time.Sleep(time.Second)
		release()
	})
	assert.Equal(t, time.Second, layer)
	assert.Zero(t, acquired)
}

// Waiters that give up at the very instant a slot frees leak nothing: a
// slot handed to a waiter whose context ended goes to the next in line or
// back to the limiter (failsafe-lib/failsafe#393: a bulkhead lost a permit
// to each abandoned waiter until it had none). 200 rounds: one call holds
// the only slot for 10 ms while eight wait with deadlines at 9, 10 and
// 11 ms; after each round nothing is held, and the next call takes the
// slot at once.
func TestLayer_LM4_WaitersGivingUpAsASlotFreesLeakNothing(t *testing.T) {
	fixed, err := concurrency.New(1)
	require.NoError(t, err)
	adaptive := fixedAdaptive(t, 1, 0)
	for name, lim := range map[string]concurrency.Slots{"Limiter": fixed, "AdaptiveLimiter": adaptive} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				layer, err := concurrency.NewLayer[time.Duration, string](concurrency.Config{Limiter: lim, Mode: concurrency.Wait})
				require.NoError(t, err)
				svc := layer.Wrap(sleeper)
				var served, gaveUp atomic.Int64
				for range 200 {
					var wg sync.WaitGroup
					wg.Go(func() {
						_, err := svc.Call(t.Context(), 10*time.Millisecond)
						assert.NoError(t, err)
					})
					synctest.Wait()
					for i := range 8 {
						wg.Go(func() {
							ctx, cancel := context.WithTimeout(t.Context(), time.Duration(9+i%3)*time.Millisecond)
							defer cancel()
							if _, err := svc.Call(ctx, 0); err != nil {
								require.ErrorIs(t, err, context.DeadlineExceeded)
								gaveUp.Add(1)
								return
							}
							served.Add(1)
						})
					}
					wg.Wait()
					free, cancel := context.WithTimeout(t.Context(), time.Nanosecond)
					_, err := svc.Call(free, 0)
					cancel()
					require.NoError(t, err, "the slot is free again")
				}
				assert.Equal(t, int64(200*8), served.Load()+gaveUp.Load())
				assert.Positive(t, served.Load(), "some waiters got the slot")
				assert.Positive(t, gaveUp.Load(), "some gave up")
			})
		})
	}
}
