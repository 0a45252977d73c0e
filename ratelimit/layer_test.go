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
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ratelimit"
)

func TestNewLayer_RejectsBadArguments(t *testing.T) {
	_, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: nil, Mode: ratelimit.Wait})
	assert.EqualError(t, err, "ratelimit: limiter must not be nil")
	_, err = ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: rate.NewLimiter(1, 1), Mode: ratelimit.Mode(-1)})
	assert.EqualError(t, err, "ratelimit: mode must be Wait or Refuse, got Mode(-1)")
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

// With a Clock, tokens come due on its monotonic reading and the waiting
// call waits on its timer: a step of its wall reading moves nothing.
func TestLayer_CK5_WaitOnTheSuppliedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFake()
		l, err := ratelimit.NewLayer[string, string](ratelimit.Config{Limiter: rate.NewLimiter(1, 1), Clock: clk})
		require.NoError(t, err)
		svc := l.Wrap(okService)
		_, err = svc.Call(context.Background(), "")
		require.NoError(t, err)
		for i, jump := range []time.Duration{-time.Hour, 2 * time.Hour} {
			done := make(chan error, 1)
			go func() {
				_, err := svc.Call(context.Background(), "")
				done <- err
			}()
			synctest.Wait()
			clk.Jump(jump) // a wall step moves no token
			clk.Advance(time.Second - time.Nanosecond)
			synctest.Wait()
			require.Len(t, done, 0, "call %d waits a nanosecond more", i+2)
			clk.Advance(time.Nanosecond)
			require.NoError(t, <-done)
		}
		assert.Equal(t, 2, clk.Stats().AfterFunc)
		assert.Zero(t, clk.Stats().Now)
	})
}

// A caller's context ending while it waits on the clock ends the wait and
// gives the token back.
func TestLayer_CK5_ClockWaitEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFake()
		lim := rate.NewLimiter(1, 1)
		l, err := ratelimit.NewLayer[string, string](ratelimit.Config{Limiter: lim, Clock: clk})
		require.NoError(t, err)
		svc := l.Wrap(okService)
		_, err = svc.Call(context.Background(), "")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := svc.Call(ctx, "")
			done <- err
		}()
		synctest.Wait()
		clk.Advance(300 * time.Millisecond)
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
		go func() {
			_, err := svc.Call(context.Background(), "")
			done <- err
		}()
		synctest.Wait()
		clk.Advance(700*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		require.Len(t, done, 0, "the token given back is due 1s after the first")
		clk.Advance(time.Nanosecond)
		require.NoError(t, <-done)
	})
}

// A limiter that can never grant a token refuses at once in Wait mode too,
// with a RetryAfter of rate.InfDuration, whether or not the caller has a
// deadline, and whether or not calls already wait.
func TestLayer_LM10_NeverGrantingLimiterRefusesAtOnceInWaitMode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit rate.Limit
		burst int
		spend int // calls admitted before the limiter can never grant
	}{
		{name: "limit 0, burst spent", limit: 0, burst: 1, spend: 1},
		{name: "negative limit, burst spent", limit: -1, burst: 2, spend: 2},
		{name: "burst 0", limit: 1, burst: 0, spend: 0},
	} {
		for _, deadline := range []bool{false, true} {
			name := tc.name + ", no deadline"
			if deadline {
				name = tc.name + ", 1s deadline"
			}
			for mode, m := range modes {
				t.Run(name+", "+mode, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						ok := rampart.ServiceFunc[int, int](func(_ context.Context, i int) (int, error) { return i, nil })
						{
							svc, err := wrap.Service(ok, ratelimit.NewLayer, ratelimit.Config{Limiter: rate.NewLimiter(tc.limit, tc.burst), Mode: m})
							require.NoError(t, err)
							for i := range tc.spend {
								_, err := svc.Call(t.Context(), i)
								require.NoError(t, err)
							}
							ctx := t.Context()
							if deadline {
								c, cancel := context.WithTimeout(ctx, time.Second)
								defer cancel()
								ctx = c
							}
							start := time.Now()
							_, err = svc.Call(ctx, 99)
							assert.Equal(t, time.Duration(0), time.Since(start), "refused at once")
							var le *ratelimit.LimitedError
							require.True(t, errors.As(err, &le), "got %v", err)
							assert.Equal(t, rate.InfDuration, le.Wait)
							assert.False(t, le.PastDeadline)
							assert.EqualError(t, err, "ratelimit: limited: the limiter can never grant a token")
						}
					})
				})
			}
		}
	}
}

// On the real clock a few nanoseconds pass between the reservation and its
// delay being read, so x/time/rate's "never" arrives as a delay just under
// rate.InfDuration: it is still "never". (Inside synctest no time passes
// there, which is why this case runs on the real clock.)
func TestLayer_LM10_NeverGrantingLimiterRefusesOnTheRealClock(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(_ context.Context, i int) (int, error) { return i, nil })
	for _, deadline := range []bool{false, true} {
		svc, err := wrap.Service(ok, ratelimit.NewLayer, ratelimit.Config{Limiter: rate.NewLimiter(0, 1), Mode: ratelimit.Wait})
		require.NoError(t, err)
		_, err = svc.Call(t.Context(), 1)
		require.NoError(t, err)
		// A call that waited for the never-coming token would end only
		// when this context does, and fail the assertions below.
		ctx, cancel := context.WithCancel(t.Context())
		stop := context.AfterFunc(t.Context(), cancel)
		timer := time.AfterFunc(10*time.Second, cancel)
		if deadline {
			var c context.CancelFunc
			ctx, c = context.WithTimeout(ctx, time.Second)
			defer c()
		}
		_, err = svc.Call(ctx, 2)
		timer.Stop()
		stop()
		cancel()
		var le *ratelimit.LimitedError
		require.True(t, errors.As(err, &le), "deadline %v: got %v", deadline, err)
		assert.Equal(t, rate.InfDuration, le.Wait, "deadline %v", deadline)
		assert.False(t, le.PastDeadline, "deadline %v", deadline)
	}
}

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	var calls struct{ n atomic.Int64 }
	keyed := func() *ratelimit.Keyed {
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 1})
		require.NoError(t, err)
		return k
	}
	key := func(int) string { return "k" }
	nilcheck.Run(t, 1, []nilcheck.Case[int, int]{
		{
			Name: "nil limiter",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(echo(&calls.n), ratelimit.NewLayer, ratelimit.Config{Limiter: nil, Mode: ratelimit.Wait})
			},
			Want: "ratelimit: limiter must not be nil",
		},
		{
			Name: "zero limiter refuses",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(echo(&calls.n), ratelimit.NewLayer, ratelimit.Config{Limiter: &rate.Limiter{}, Mode: ratelimit.Wait})
			},
			Want: "ratelimit: limited: the limiter can never grant a token",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: rate.NewLimiter(1, 1), Mode: ratelimit.Wait})
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "ratelimit: Wrap: rampart: nil service",
			NilService: true,
		},
		{
			Name: "WrapKeyed with nil key",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service3(echo(&calls.n), ratelimit.NewKeyedLayer, keyed(), nil, ratelimit.Wait)
			},
			Want: "ratelimit: key must not be nil",
		},
		{
			Name: "keyed layer wraps nil service",
			Build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](keyed(), key, ratelimit.Wait)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "ratelimit: Wrap: rampart: nil service",
			NilService: true,
		},
		{
			Name: "nil Keyed",
			Build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](nil, key, ratelimit.Wait)
				return wrapIfOK(l, err, echo(&calls.n))
			},
			Want: "ratelimit: keyed limiter must not be nil",
		},
		{
			Name: "zero Keyed",
			Build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](&ratelimit.Keyed{}, key, ratelimit.Wait)
				return wrapIfOK(l, err, echo(&calls.n))
			},
			Want: "ratelimit: keyed limiter must be made by NewKeyed, got a zero Keyed",
		},
		{
			Name: "nil key",
			Build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](keyed(), nil, ratelimit.Wait)
				return wrapIfOK(l, err, echo(&calls.n))
			},
			Want: "ratelimit: key must not be nil",
		},
	})
	assert.Zero(t, calls.n.Load())
}

func TestRateLimit_EV6_RefusedAndQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		lim := rate.NewLimiter(10, 1) // a token every 100ms
		svc, err := wrap.Service(echoReq, ratelimit.NewLayer, ratelimit.Config{Limiter: lim, Name: "api", Observer: &rec})
		require.NoError(t, err)

		_, err = svc.Call(t.Context(), "free token")
		require.NoError(t, err)
		_, err = svc.Call(t.Context(), "waits 100ms")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, errDeadline := svc.Call(ctx, "refused: the token is due after the deadline")
		require.ErrorIs(t, errDeadline, ratelimit.ErrLimited)

		require.Equal(t, []observe.Event{
			{Source: observe.RateLimit, Name: "api", Kind: observe.Queued, Duration: 100 * time.Millisecond},
			{Source: observe.RateLimit, Name: "api", Kind: observe.Refused, Err: errDeadline},
		}, rec.Events())
	})
}

// A day of idleness earns the burst and no more (Guava's RateLimiter
// stored permits for an idle period, google/guava#4014): with 10 tokens a
// second and a burst of 5, twenty callers arriving at once after a day
// get 5 tokens at once and then one every 100 ms, in arrival order in
// Wait mode; in Refuse mode 5 are admitted and the other 15 refused,
// each told to come back in 100 ms, when the next token is due.
func TestLayer_LM1_LongIdleEarnsOnlyTheBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := rate.NewLimiter(10, 5)
		var calls atomic.Int64
		svc := build(t, lim, ratelimit.Wait, echo(&calls))
		time.Sleep(24 * time.Hour)
		start := time.Now()
		admitted := make([]time.Duration, 20)
		var wg sync.WaitGroup
		for i := range admitted {
			wg.Go(func() {
				_, err := svc.Call(t.Context(), i)
				assert.NoError(t, err)
				admitted[i] = time.Since(start)
			})
			synctest.Wait() // arrival order is i
		}
		wg.Wait()
		want := make([]time.Duration, 20)
		for i := range want {
			want[i] = time.Duration(max(0, i-4)) * 100 * time.Millisecond
		}
		assert.Equal(t, want, admitted)
	})
	synctest.Test(t, func(t *testing.T) {
		lim := rate.NewLimiter(10, 5)
		var calls atomic.Int64
		svc := build(t, lim, ratelimit.Refuse, echo(&calls))
		time.Sleep(24 * time.Hour)
		for i := range 20 {
			_, err := svc.Call(t.Context(), i)
			if i < 5 {
				require.NoError(t, err, "call %d", i)
				continue
			}
			requireLimited(t, err, 100*time.Millisecond, false)
		}
		assert.Equal(t, int64(5), calls.Load())
	})
}

// TestNewLayer_NZ1_NilPointerClockIsAnError: a Clock that is a nil pointer inside the interface is refused
// at construction, not dereferenced at the first reading mid-traffic.
func TestNewLayer_NZ1_NilPointerClockIsAnError(t *testing.T) {
	_, err := ratelimit.NewLayer[string, string](ratelimit.Config{Limiter: rate.NewLimiter(1, 1), Mode: ratelimit.Refuse, Clock: (*clock.Fake)(nil)})
	assert.EqualError(t, err, "ratelimit: Clock must not be a nil func or pointer, got *clock.Fake(nil)")
}
