package concurrency_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/wrap"
)

// holder is a service whose calls block until release is closed.
type holder struct{ release chan struct{} }

func (h holder) Call(ctx context.Context, _ int) (int, error) {
	<-h.release
	return 0, nil
}

var (
	sheddable = rampart.WithCriticality(context.Background(), rampart.Sheddable)
	critical  = rampart.WithCriticality(context.Background(), rampart.Critical)
)

// admitted starts a call with ctx through svc and reports, once every
// goroutine is blocked, whether it holds a slot (true) or was refused
// with the limit's refusal (false).
func admitted(t *testing.T, svc rampart.Service[int, int], ctx context.Context) bool {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := svc.Call(ctx, 1)
		errc <- err
	}()
	synctest.Wait()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, concurrency.ErrLimited)
		return false
	default:
		return true
	}
}

// With a limit of 8 (sheddable share 6, critical reserve 8), in Refuse
// mode: sheddable calls get slots only below 6 held, default ones below
// 8, critical ones below 16; the same for either limiter.
func TestCriticality_PG6_RefusedSheddableFirstCriticalLast(t *testing.T) {
	for _, name := range []string{"Limiter", "AdaptiveLimiter"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var slots concurrency.Slots
				var inFlight func() int
				if name == "Limiter" {
					l, err := concurrency.New(8)
					require.NoError(t, err)
					slots, inFlight = l, l.InFlight
				} else {
					l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{InitialLimit: 8, MaxLimit: 8})
					require.NoError(t, err)
					slots, inFlight = l, l.InFlight
				}
				h := holder{release: make(chan struct{})}
				svc, err := wrap.Service[int, int](h, concurrency.NewLayer, concurrency.Config{Limiter: slots, Mode: concurrency.Refuse})
				require.NoError(t, err)
				rf := slots.(interface{ ReadyFor(context.Context) bool })

				for i := range 5 {
					require.True(t, admitted(t, svc, sheddable), "sheddable %d", i)
				}
				require.True(t, admitted(t, svc, context.Background()))
				assert.Equal(t, 6, inFlight())
				assert.False(t, rf.ReadyFor(sheddable))
				assert.True(t, rf.ReadyFor(context.Background()))
				assert.False(t, admitted(t, svc, sheddable), "at 6 of 8: sheddable refused")
				assert.True(t, admitted(t, svc, context.Background()))
				assert.True(t, admitted(t, svc, critical))
				assert.Equal(t, 8, inFlight())
				assert.False(t, rf.ReadyFor(context.Background()))
				assert.True(t, rf.ReadyFor(critical))
				assert.False(t, admitted(t, svc, context.Background()), "at 8 of 8: default refused")
				for i := range 8 {
					assert.True(t, admitted(t, svc, critical), "critical takes the reserve, %d", i)
				}
				assert.Equal(t, 16, inFlight())
				assert.False(t, rf.ReadyFor(critical))
				assert.False(t, admitted(t, svc, critical), "reserve taken: critical refused")
				close(h.release)
				synctest.Wait()
				assert.Equal(t, 0, inFlight())
			})
		})
	}
}

// In Wait mode a sheddable call above its share is refused at once rather
// than queued, and a critical call takes the reserve ahead of a waiting
// default call; with the reserve taken it waits like the others.
func TestCriticality_PG6_WaitMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.New(2) // share 1, reserve 1
		require.NoError(t, err)
		h := holder{release: make(chan struct{})}
		svc, err := wrap.Service[int, int](h, concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: concurrency.Wait})
		require.NoError(t, err)
		require.True(t, admitted(t, svc, context.Background()))
		assert.False(t, admitted(t, svc, sheddable), "1 of 2 held: sheddable refused at once")
		require.True(t, admitted(t, svc, context.Background()))
		waiting := make(chan error, 1)
		go func() { _, err := svc.Call(context.Background(), 1); waiting <- err }()
		synctest.Wait()
		assert.True(t, admitted(t, svc, critical), "critical takes the reserve ahead of the waiting call")
		assert.Equal(t, 3, l.InFlight())
		assert.True(t, admitted(t, svc, critical), "reserve taken: the critical call waits")
		close(h.release)
		synctest.Wait()
		assert.NoError(t, <-waiting)
		assert.Equal(t, 0, l.InFlight())
	})
}

// A call that carries no criticality costs nothing more: no allocation on
// any path, and the refusals of the criticality rule allocate nothing.
func TestCriticality_PG6_NoAllocations(t *testing.T) {
	l, err := concurrency.New(4)
	require.NoError(t, err)
	svc, err := wrap.Service[int, int](rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, nil }), concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
	require.NoError(t, err)
	for _, ctx := range []context.Context{context.Background(), sheddable, critical} {
		assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, 1) }))
	}
	for range 3 {
		require.True(t, l.TryAcquire())
	}
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		if _, err := svc.Call(sheddable, 1); !errors.Is(err, concurrency.ErrLimited) {
			t.Fatal(err)
		}
	}))
}

// BenchmarkLayer_Criticality measures a call through a Refuse-mode layer
// with a free slot, without criticality and with each criticality, below
// and above the sheddable share.
func BenchmarkLayer_Criticality(b *testing.B) {
	for _, tc := range []struct {
		name string
		ctx  context.Context
		held int
	}{
		{"unset", context.Background(), 0},
		{"critical", critical, 0},
		{"unset/loaded", context.Background(), 6},
		{"critical/loaded", critical, 6},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := concurrency.New(8)
			require.NoError(b, err)
			for range tc.held {
				require.True(b, l.TryAcquire())
			}
			svc, err := wrap.Service[int, int](rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, nil }), concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = svc.Call(tc.ctx, 1)
			}
		})
	}
}

// A critical call that waits is not stuck behind ordinary waiters while
// the reserve has room (a priority inversion): with L = 2, two default
// calls of 100ms, two critical ones of 10ms in the reserve, then a
// default and a critical call waiting in that order, the critical one
// gets the slot the first critical call gives back, at 10ms, and the
// default one waits for a default slot, at 100ms. It used to wait the
// 100ms, behind the default call.
func TestCriticality_PG6_WaitingCriticalCallTakesTheFreedReserve(t *testing.T) {
	for name, lim := range map[string]func() concurrency.Slots{
		"Limiter":         func() concurrency.Slots { l, _ := concurrency.New(2); return l },
		"AdaptiveLimiter": func() concurrency.Slots { return fixedAdaptive(t, 2, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc, err := wrap.Service[time.Duration, string](sleeper, concurrency.NewLayer, concurrency.Config{Limiter: lim(), Mode: concurrency.Wait})
				require.NoError(t, err)
				crit := rampart.WithCriticality(t.Context(), rampart.Critical)
				start := time.Now()
				var wg sync.WaitGroup
				for _, ctx := range []context.Context{t.Context(), t.Context(), crit, crit} {
					wg.Go(func() {
						_, err := svc.Call(ctx, map[bool]time.Duration{true: 10 * time.Millisecond, false: 100 * time.Millisecond}[ctx == crit])
						assert.NoError(t, err)
					})
					synctest.Wait()
				}
				var defaultAt, criticalAt time.Duration
				wg.Go(func() {
					_, err := svc.Call(t.Context(), 0)
					assert.NoError(t, err)
					defaultAt = time.Since(start)
				})
				synctest.Wait()
				wg.Go(func() {
					_, err := svc.Call(crit, 0)
					assert.NoError(t, err)
					criticalAt = time.Since(start)
				})
				wg.Wait()
				assert.Equal(t, 10*time.Millisecond, criticalAt, "critical")
				assert.Equal(t, 100*time.Millisecond, defaultAt, "default")
			})
		})
	}
}

// Critical and default calls in Wait mode, with random durations and
// deadlines, on either limiter: never more than 2L held, every call
// served or given up by its deadline, and nothing held at the end.
func TestCriticality_PG6_WaitModeHammer(t *testing.T) {
	for name, lim := range map[string]func() concurrency.Slots{
		"Limiter":         func() concurrency.Slots { l, _ := concurrency.New(4); return l },
		"AdaptiveLimiter": func() concurrency.Slots { return fixedAdaptive(t, 4, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := lim()
				var held, most atomic.Int64
				work := rampart.ServiceFunc[time.Duration, string](func(_ context.Context, d time.Duration) (string, error) {
					n := held.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(d)
					held.Add(-1)
					return "ok", nil
				})
				svc, err := wrap.Service[time.Duration, string](work, concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: concurrency.Wait})
				require.NoError(t, err)
				var served, gaveUp atomic.Int64
				var wg sync.WaitGroup
				for i := range 64 {
					wg.Go(func() {
						c := rampart.DefaultCriticality
						if i%2 == 0 {
							c = rampart.Critical
						}
						for range 50 {
							ctx, cancel := context.WithTimeout(rampart.WithCriticality(t.Context(), c), time.Duration(1+rand.N(20))*time.Millisecond)
							_, err := svc.Call(ctx, time.Duration(rand.N(5))*time.Millisecond)
							cancel()
							if err != nil {
								require.ErrorIs(t, err, context.DeadlineExceeded)
								gaveUp.Add(1)
								continue
							}
							served.Add(1)
						}
					})
				}
				wg.Wait()
				assert.Equal(t, int64(64*50), served.Load()+gaveUp.Load())
				assert.LessOrEqual(t, most.Load(), int64(8))
				assert.Positive(t, served.Load())
				type inFlight interface{ InFlight() int }
				assert.Equal(t, 0, l.(inFlight).InFlight())
			})
		})
	}
}

// racing is a context whose first Err or Done runs fill once: other
// callers taking slots at the instant the call first looks at its
// context, between the limiter's look at how many are held and its take.
type racing struct {
	context.Context
	once sync.Once
	fill func()
}

func (c *racing) Err() error            { c.once.Do(c.fill); return c.Context.Err() }
func (c *racing) Done() <-chan struct{} { c.once.Do(c.fill); return c.Context.Done() }

// A critical call that arrives below the sheddable share, while other
// calls take the last free slots, still gets a slot of the reserve:
// limit 8, 5 held, the other 3 taken as it arrives; it is served, in
// either mode and by either limiter, and 9 are held (refused, or
// waiting behind the default line, before).
func TestCriticality_PG6_CriticalCallRacingTheLastSlots(t *testing.T) {
	for _, name := range []string{"Limiter", "AdaptiveLimiter"} {
		for mode, m := range modes {
			t.Run(name+"/"+mode, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var slots concurrency.Slots
					var take func() bool
					var inFlight func() int
					if name == "Limiter" {
						l, err := concurrency.New(8)
						require.NoError(t, err)
						slots, take, inFlight = l, l.TryAcquire, l.InFlight
					} else {
						l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{InitialLimit: 8, MaxLimit: 8})
						require.NoError(t, err)
						take = func() bool { _, ok := l.TryAcquire(); return ok }
						slots, inFlight = l, l.InFlight
					}
					for range 5 {
						require.True(t, take())
					}
					h := holder{release: make(chan struct{})}
					svc, err := wrap.Service[int, int](h, concurrency.NewLayer, concurrency.Config{Limiter: slots, Mode: m})
					require.NoError(t, err)
					ctx, cancel := context.WithCancel(critical)
					defer cancel()
					rc := &racing{Context: ctx, fill: func() {
						for range 3 {
							require.True(t, take())
						}
					}}
					require.True(t, admitted(t, svc, rc), "critical call refused")
					require.Equal(t, 9, inFlight(), "5 held, 3 taken as it arrived, 1 of the reserve")
					close(h.release)
				})
			})
		}
	}
}

// The Wait-mode hammer again on the real scheduler, where wake-ups race
// as synctest's bubble never makes them: calls of all three criticalities
// in Wait and Refuse mode share one limit of 4, give up after random
// microseconds, fail now and then, while another goroutine halves the
// limit and restores it. Afterwards every slot is back where it belongs,
// not merely counted back: exactly 4 default calls and 4 more critical
// ones get a slot, the 9th critical one is refused; and the default
// calls were served throughout, not starved by the critical ones.
func TestCriticality_PG6_RealSchedulerHammerGivesEverySlotBack(t *testing.T) {
	if testing.Short() {
		t.Skip("hammer")
	}
	type limiter interface {
		concurrency.Slots
		InFlight() int
	}
	for name, tc := range map[string]struct {
		lim  func() limiter
		tune func(l limiter, n int)
	}{
		"Limiter": {
			lim:  func() limiter { l, _ := concurrency.New(4); return l },
			tune: func(l limiter, n int) { require.NoError(t, l.(*concurrency.Limiter).SetMax(n)) },
		},
		"AdaptiveLimiter": {
			lim: func() limiter { return fixedAdaptive(t, 4, 0) },
			tune: func(l limiter, n int) {
				require.NoError(t, l.(*concurrency.AdaptiveLimiter).Tune(concurrency.AdaptiveTuning{MinLimit: n, MaxLimit: n}))
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := tc.lim()
			var held, most atomic.Int64
			errFail := errors.New("fail")
			work := rampart.ServiceFunc[int, int](func(_ context.Context, n int) (int, error) {
				h := held.Add(1)
				for m := most.Load(); h > m && !most.CompareAndSwap(m, h); m = most.Load() {
				}
				time.Sleep(time.Duration(n%50) * time.Microsecond)
				held.Add(-1)
				if n%7 == 0 {
					return 0, errFail
				}
				return n, nil
			})
			svcs := map[concurrency.Mode]rampart.Service[int, int]{}
			for _, mode := range modes {
				svc, err := wrap.Service[int, int](work, concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: mode})
				require.NoError(t, err)
				svcs[mode] = svc
			}
			crits := []rampart.Criticality{rampart.Sheddable, rampart.DefaultCriticality, rampart.Critical}
			var served [3]atomic.Int64
			stop := make(chan struct{})
			var tuner sync.WaitGroup
			tuner.Go(func() {
				for n := 2; ; n = 6 - n { // 2, 4, 2, ...
					select {
					case <-stop:
						tc.tune(l, 4)
						return
					case <-time.After(200 * time.Microsecond):
						tc.tune(l, n)
					}
				}
			})
			var wg sync.WaitGroup
			for i := range 48 {
				wg.Go(func() {
					c := crits[i%3]
					mode := concurrency.Wait
					if i%4 == 0 {
						mode = concurrency.Refuse
					}
					for j := range 300 {
						ctx, cancel := context.WithTimeout(rampart.WithCriticality(t.Context(), c), time.Duration(1+rand.N(200))*time.Microsecond)
						_, err := svcs[mode].Call(ctx, i*300+j)
						cancel()
						switch {
						case err == nil, errors.Is(err, errFail):
							served[c-rampart.Sheddable].Add(1)
						case errors.Is(err, concurrency.ErrLimited), errors.Is(err, context.DeadlineExceeded):
						default:
							t.Errorf("unexpected error %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			close(stop)
			tuner.Wait()

			assert.LessOrEqual(t, most.Load(), int64(8), "never more than the limit and its reserve")
			assert.Positive(t, served[1].Load(), "default calls served")
			assert.Positive(t, served[2].Load(), "critical calls served")
			require.Equal(t, 0, l.InFlight())
			var releases []func()
			defer func() {
				for _, r := range releases {
					r()
				}
			}()
			for k, ctx := range []context.Context{t.Context(), t.Context(), t.Context(), t.Context(), critical, critical, critical, critical} {
				release, err := concurrency.Acquire(ctx, concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
				if !assert.NoError(t, err, "slot %d", k) {
					return
				}
				releases = append(releases, release)
			}
			_, err := concurrency.Acquire(t.Context(), concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
			assert.ErrorIs(t, err, concurrency.ErrLimited, "a 5th default call")
			_, err = concurrency.Acquire(critical, concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
			assert.ErrorIs(t, err, concurrency.ErrLimited, "a 9th critical call")
			assert.Equal(t, 8, l.InFlight())
		})
	}
}
