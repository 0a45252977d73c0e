package loadshed_test

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
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/loadshed"
)

// Given a limiter, loadshed sheds by its ReadyFor: sheddable calls above
// three quarters of the slots, default ones at the limit, critical ones
// only once the reserve is taken too. Given a plain Readiness, it sheds
// sheddable and default calls when not ready and lets critical ones
// through to the resource.
func TestShed_PG6_ByCriticality(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 1, nil })
	sheddable := rampart.WithCriticality(context.Background(), rampart.Sheddable)
	critical := rampart.WithCriticality(context.Background(), rampart.Critical)
	lim, err := concurrency.New(4) // share 3, reserve 4
	require.NoError(t, err)
	svc, err := wrap.Service[int, int](ok, loadshed.NewLayer, loadshed.Config{Readiness: lim})
	require.NoError(t, err)
	calls := func() []bool {
		var got []bool
		for _, ctx := range []context.Context{sheddable, context.Background(), critical} {
			_, err := svc.Call(ctx, 1)
			got = append(got, err == nil)
		}
		return got
	}
	assert.Equal(t, []bool{true, true, true}, calls())
	for range 3 {
		require.True(t, lim.TryAcquire())
	}
	assert.Equal(t, []bool{false, true, true}, calls(), "3 of 4 held")
	require.True(t, lim.TryAcquire())
	assert.Equal(t, []bool{false, false, true}, calls(), "4 of 4 held")
	// Critical calls of the limiter's own layer take the reserve of 4:
	// now critical calls are shed too.
	release := make(chan struct{})
	held, err := wrap.Service[int, int](rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) {
		<-release
		return 1, nil
	}), concurrency.NewLayer, concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	require.NoError(t, err)
	done := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := held.Call(critical, 1)
			done <- err
		}()
	}
	require.Eventually(t, func() bool { return !lim.ReadyFor(critical) }, time.Minute, time.Millisecond)
	assert.Equal(t, []bool{false, false, false}, calls(), "4 of 4 and the reserve held")
	close(release)
	for range 4 {
		require.NoError(t, <-done)
	}
	assert.Equal(t, []bool{false, false, true}, calls(), "the reserve freed")

	plain, err := wrap.Service[int, int](ok, loadshed.NewLayer, loadshed.Config{Readiness: loadshed.ReadyFunc(func() bool { return false })})
	require.NoError(t, err)
	for ctx, want := range map[context.Context]bool{sheddable: false, context.Background(): false, critical: true} {
		_, err := plain.Call(ctx, 1)
		if want {
			assert.NoError(t, err)
		} else {
			assert.ErrorIs(t, err, loadshed.ErrOverloaded)
		}
	}
}

// A flood of sheddable work never pushes out critical work (the priority
// inversion of a shedder that refuses whatever arrives when it is full):
// behind loadshed and a concurrency limit of 8 in Refuse mode, 50
// sheddable and 30 default callers in a closed loop (1 ms pause after a
// refusal) keep the limit full for a second, and the 4 critical callers
// are served every time, 100 calls of 10 ms each; sheddable work never
// holds more than its share of 6 slots, sheddable and default together
// never more than the 8.
func TestShed_PG6_SheddableFloodNeverRefusesCritical(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.New(8)
		require.NoError(t, err)
		var mu sync.Mutex
		held := map[rampart.Criticality]int{}
		most := map[rampart.Criticality]int{}
		mostOrdinary := 0
		work := rampart.ServiceFunc[int, int](func(ctx context.Context, _ int) (int, error) {
			c := rampart.CriticalityOf(ctx)
			mu.Lock()
			held[c]++
			most[c] = max(most[c], held[c])
			mostOrdinary = max(mostOrdinary, held[rampart.Sheddable]+held[rampart.DefaultCriticality])
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			held[c]--
			mu.Unlock()
			return 1, nil
		})
		svc := rampart.NewBuilder[int, int]().
			With(loadshed.NewLayer[int, int](loadshed.Config{Readiness: lim})).
			With(concurrency.NewLayer[int, int](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})).
			Service(work)

		// The flood ends 5 ms before the 100th critical call returns (at
		// 1s): at the same instant, which of the deadline and the caller's
		// check of it ran first decided between 100 and 101 calls.
		ctx, stop := context.WithTimeout(t.Context(), time.Second-5*time.Millisecond)
		defer stop()
		var served, refused [3]atomic.Int64 // by criticality + 1
		var wg sync.WaitGroup
		for c, n := range map[rampart.Criticality]int{rampart.Sheddable: 50, rampart.DefaultCriticality: 30, rampart.Critical: 4} {
			cctx := rampart.WithCriticality(ctx, c)
			for range n {
				wg.Go(func() {
					for cctx.Err() == nil {
						if _, err := svc.Call(cctx, 1); err != nil {
							if errors.Is(err, rampart.ErrRefused) {
								refused[c+1].Add(1)
							}
							time.Sleep(time.Millisecond)
							continue
						}
						served[c+1].Add(1)
					}
				})
			}
		}
		wg.Wait()
		assert.Equal(t, int64(400), served[rampart.Critical+1].Load(), "every critical call served")
		assert.Zero(t, refused[rampart.Critical+1].Load(), "no critical call refused")
		// Default work may keep sheddable work out all second (it gets
		// slots only below its share), or sheddable work may take its
		// share first: which depends on the order callers run at each
		// instant. What holds in every order: ordinary work is served
		// (criticals take at most 4 of the 8 slots), and both kinds are
		// refused (80 arrive for 8 slots at 0).
		assert.Positive(t, served[rampart.Sheddable+1].Load()+served[rampart.DefaultCriticality+1].Load(), "ordinary work served")
		assert.Positive(t, refused[rampart.Sheddable+1].Load())
		assert.Positive(t, refused[rampart.DefaultCriticality+1].Load())
		assert.LessOrEqual(t, most[rampart.Sheddable], 6, "sheddable within its share")
		assert.LessOrEqual(t, mostOrdinary, 8, "sheddable and default within the limit")
		assert.Equal(t, 4, most[rampart.Critical])
	})
}
