package hedge_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/wrap"
)

const ms = time.Millisecond

func newHedged(t *testing.T, b *backend, cfg hedge.Config[string, string]) rampart.Service[string, string] {
	t.Helper()
	svc, err := wrap.Service(rampart.Service[string, string](b), hedge.NewLayer, cfg)
	require.NoError(t, err)
	return svc
}

// call calls svc and returns the answer and how long the call took.
func call(svc rampart.Service[string, string], ctx context.Context) (string, time.Duration, error) {
	start := time.Now()
	resp, err := svc.Call(ctx, "req")
	return resp, time.Since(start), err
}

func TestHedge_FastHedgeWinsAndPrimaryIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms}, step{latency: 5 * ms})
		budget := budgettest.New(10)
		svc := newHedged(t, b, hedge.Config[string, string]{Hedgeable: always, Budget: budget, Delay: 10 * ms})

		resp, took, err := call(svc, context.Background())

		require.NoError(t, err)
		assert.Equal(t, "req#1", resp)
		assert.Equal(t, 15*ms, took)
		assert.Zero(t, b.inflight.Load(), "an attempt outlived the call (TO3)")
		assert.Equal(t, []string{"0s start 0", "10ms start 1", "15ms answer 1", "15ms cancelled 0"}, b.Log())
		assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 1}, budget.Counts(), "a copy that was sent is not refunded (RT10)")
	})
}

func TestHedge_PrimaryAnswersBeforeDelay_NoHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 5 * ms}, step{latency: 5 * ms})
		budget := budgettest.New(10)
		svc := newHedged(t, b, hedge.Config[string, string]{Hedgeable: always, Budget: budget, Delay: 10 * ms})

		resp, took, err := call(svc, context.Background())
		time.Sleep(time.Second) // long past the delay: no stray timer sends a hedge
		synctest.Wait()

		require.NoError(t, err)
		assert.Equal(t, "req#0", resp)
		assert.Equal(t, 5*ms, took)
		assert.Equal(t, 1, b.Calls())
		assert.Equal(t, budgettest.Counts{Deposits: 1}, budget.Counts())
	})
}

func TestHedge_MaxAttemptsBoundsHedges(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxAttempts int
		wantStarts  []string
	}{
		{name: "default is one hedge", maxAttempts: 0, wantStarts: []string{"0s start 0", "10ms start 1"}},
		{name: "one disables hedging", maxAttempts: 1, wantStarts: []string{"0s start 0"}},
		{name: "three", maxAttempts: 3, wantStarts: []string{"0s start 0", "10ms start 1", "20ms start 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				slow := step{latency: 100 * ms}
				b := newBackend(slow, slow, slow, slow, slow)
				budget := budgettest.New(10)
				svc := newHedged(t, b, hedge.Config[string, string]{
					Hedgeable: always, Budget: budget, Delay: 10 * ms, MaxAttempts: tc.maxAttempts,
				})

				resp, took, err := call(svc, context.Background())

				require.NoError(t, err)
				assert.Equal(t, "req#0", resp, "the original answers first, at 100ms")
				assert.Equal(t, 100*ms, took)
				n := len(tc.wantStarts)
				assert.Equal(t, n, b.Calls())
				log := b.Log()
				require.Len(t, log, 2*n)
				assert.Equal(t, tc.wantStarts, log[:n])
				assert.Equal(t, "100ms answer 0", log[n])
				// The losers notice their cancellation at the same instant,
				// in no particular order.
				var cancelled []string
				for i := 1; i < n; i++ {
					cancelled = append(cancelled, "100ms cancelled "+string(rune('0'+i)))
				}
				assert.ElementsMatch(t, cancelled, log[n+1:])
			})
		})
	}
}

func TestHedge_BudgetExhaustionStopsNewHedgesButNotInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms}, step{latency: 50 * ms}, step{latency: ms}, step{latency: ms})
		budget := budgettest.New(1)
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budget, Delay: 10 * ms, MaxAttempts: 4,
		})

		resp, took, err := call(svc, context.Background())

		require.NoError(t, err)
		assert.Equal(t, "req#1", resp, "the hedge sent before the budget ran dry still answers")
		assert.Equal(t, 60*ms, took)
		assert.Equal(t, []string{"0s start 0", "10ms start 1", "60ms answer 1", "60ms cancelled 0"}, b.Log())
		assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 1, Refused: 1}, budget.Counts(), "refused once at 20ms, then never asked again")
	})
}

func TestHedge_NotHedgeableRequestIsNeverHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms}, step{latency: ms})
		budget := budgettest.New(10)
		var asked []string
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: func(req string) bool { asked = append(asked, req); return false },
			Budget:    budget,
			Delay:     10 * ms,
		})

		resp, took, err := call(svc, context.Background())

		require.NoError(t, err)
		assert.Equal(t, "req#0", resp)
		assert.Equal(t, 100*ms, took)
		assert.Equal(t, 1, b.Calls())
		assert.Equal(t, []string{"req"}, asked)
		assert.Equal(t, budgettest.Counts{}, budget.Counts(), "a request that is not hedged does not touch the budget")
	})
}

func TestHedge_LearnedPercentileDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Calls 0-18 take 1ms..19ms and call 19 takes 500ms: with the 1s
		// fallback none is hedged. The window then holds 1..19ms and 500ms,
		// whose 95th percentile (nearest rank 19 of 20) is 19ms.
		var steps []step
		for i := 1; i <= 19; i++ {
			steps = append(steps, step{latency: time.Duration(i) * ms})
		}
		steps = append(steps, step{latency: 500 * ms})
		// Call 20: a slow original is hedged at exactly 19ms; the hedge
		// answers 1ms later.
		steps = append(steps, step{latency: time.Second}, step{latency: ms})
		// Calls 21-38 take 3ms each; with call 20's 1ms hedge, the window
		// holds 1ms, eighteen 3ms latencies and 500ms: 1..19ms are gone and
		// the percentile (rank 19 of 20) is 3ms. (Before the eighteenth
		// it was still 19ms, so no 3ms call races its own hedge.)
		for range 18 {
			steps = append(steps, step{latency: 3 * ms})
		}
		steps = append(steps, step{latency: time.Second}, step{latency: 2 * ms})

		b := newBackend(steps...)
		budget := budgettest.New(10)
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budget, Delay: time.Second,
			Quantile: 0.95, Window: 20, MinSamples: 20,
		})

		for i := range 20 {
			_, took, err := call(svc, context.Background())
			require.NoError(t, err)
			require.Equal(t, steps[i].latency, took, "call %d", i)
		}
		require.Equal(t, 20, b.Calls(), "no hedge before MinSamples latencies")

		resp, took, err := call(svc, context.Background())
		require.NoError(t, err)
		assert.Equal(t, "req#21", resp)
		assert.Equal(t, 20*ms, took, "hedged at the learned 19ms, answered 1ms later")

		for range 18 {
			_, _, err := call(svc, context.Background())
			require.NoError(t, err)
		}
		resp, took, err = call(svc, context.Background())
		require.NoError(t, err)
		assert.Equal(t, "req#41", resp)
		assert.Equal(t, 5*ms, took, "hedged at the new 3ms, answered 2ms later")
		assert.Equal(t, budgettest.Counts{Deposits: 40, Granted: 2}, budget.Counts())
		assert.Equal(t, 42, b.Calls())
	})
}

var (
	errA = errors.New("backend: a failed")
	errB = errors.New("backend: b failed")
)

func TestHedge_OnlyAttemptFails_ErrorAndResponseUnchanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 5 * ms, err: errA})
		var discarded discards
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
			Discard: discarded.Discard,
		})

		resp, took, err := call(svc, context.Background())
		time.Sleep(time.Second)

		assert.Same(t, errA, err, "a failure is not hedged and comes back as it is")
		assert.Equal(t, "req#0", resp)
		assert.Equal(t, 5*ms, took)
		assert.Equal(t, 1, b.Calls())
		assert.Empty(t, discarded.got())
	})
}

func TestHedge_AllAttemptsFail_EveryErrorKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 15 * ms, err: errA}, step{latency: 8 * ms, err: errB})
		var discarded discards
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms, MaxAttempts: 3,
			Discard: discarded.Discard,
		})

		resp, took, err := call(svc, context.Background())

		assert.Empty(t, resp)
		assert.Equal(t, 18*ms, took, "the hedge's failure at 18ms ends the call; no third attempt at 20ms")
		var all *hedge.AllFailedError
		require.ErrorAs(t, err, &all)
		assert.Equal(t, []error{errA, errB}, all.Errs, "in the order the attempts started")
		assert.ErrorIs(t, err, errA)
		assert.ErrorIs(t, err, errB)
		assert.EqualError(t, err, "hedge: all 2 attempts failed; attempt 1: backend: a failed; attempt 2: backend: b failed")
		assert.Equal(t, []string{"req#0", "req#1"}, discarded.got(), "the responses that came with the errors")
		assert.Equal(t, 2, b.Calls())
	})
}

func TestHedge_CallerCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := step{latency: 100 * ms}
		b := newBackend(slow, slow, slow)
		budget := budgettest.New(10)
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budget, Delay: 10 * ms, MaxAttempts: 3,
		})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(15*ms, cancel)

		resp, took, err := call(svc, ctx)
		assert.Zero(t, b.inflight.Load(), "an attempt outlived the call (TO3)")
		time.Sleep(time.Second)

		assert.Empty(t, resp)
		assert.Equal(t, 15*ms, took)
		assert.ErrorIs(t, err, context.Canceled)
		var all *hedge.AllFailedError
		require.ErrorAs(t, err, &all)
		assert.Equal(t, []error{context.Canceled, context.Canceled}, all.Errs)
		log := b.Log()
		require.Len(t, log, 4)
		assert.Equal(t, []string{"0s start 0", "10ms start 1"}, log[:2])
		assert.ElementsMatch(t, []string{"15ms cancelled 0", "15ms cancelled 1"}, log[2:])
		assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 1}, budget.Counts(), "no hedge after the caller gave up")
	})
}

// The first success is the answer even after a failure, the call waits
// for every attempt (TO3), and the response that lost is discarded, not
// lost.
func TestHedge_TO3_FirstSuccessWinsAndLosersAreDiscarded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		original step
		wantTook time.Duration
		wantLog  []string
	}{
		{
			name:     "original fails while the hedge runs",
			original: step{latency: 12 * ms, err: errA},
			wantTook: 15 * ms,
			wantLog:  []string{"0s start 0", "10ms start 1", "12ms answer 0", "15ms answer 1"},
		},
		{
			name:     "original ignores cancellation and succeeds late",
			original: step{latency: 20 * ms, ignoreCtx: true},
			wantTook: 20 * ms,
			wantLog:  []string{"0s start 0", "10ms start 1", "15ms answer 1", "20ms answer 0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBackend(tc.original, step{latency: 5 * ms})
				var discarded discards
				svc := newHedged(t, b, hedge.Config[string, string]{
					Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
					Discard: discarded.Discard,
				})

				resp, took, err := call(svc, context.Background())

				require.NoError(t, err)
				assert.Equal(t, "req#1", resp)
				assert.Equal(t, tc.wantTook, took)
				assert.Zero(t, b.inflight.Load(), "an attempt outlived the call")
				assert.Equal(t, []string{"req#0"}, discarded.got())
				assert.Equal(t, tc.wantLog, b.Log())
			})
		})
	}
}

func TestHedge_PanicInOriginalAttemptReachesCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hedges := newBackend(step{latency: 100 * ms})
		var calls atomic.Int32
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			if calls.Add(1) == 1 {
				time.Sleep(15 * ms)
				panic("boom")
			}
			return hedges.Call(ctx, req)
		})
		svc, err := wrap.Service(rampart.Service[string, string](inner), hedge.NewLayer, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
		})
		require.NoError(t, err)

		start := time.Now()
		var recovered any
		func() {
			defer func() { recovered = recover() }()
			_, _ = svc.Call(context.Background(), "req")
		}()

		assert.Equal(t, "boom", recovered)
		assert.Equal(t, 15*ms, time.Since(start))
		assert.Zero(t, hedges.inflight.Load(), "the hedge was awaited before the panic went on")
		assert.Equal(t, []string{"10ms start 0", "15ms cancelled 0"}, hedges.Log())
	})
}

func TestHedge_ContextDoneBeforeCall_NoHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms}, step{latency: ms})
		budget := budgettest.New(10)
		svc := newHedged(t, b, hedge.Config[string, string]{Hedgeable: always, Budget: budget, Delay: 10 * ms})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()

		_, took, err := call(svc, ctx)
		time.Sleep(time.Second)

		assert.Same(t, context.Canceled, err, "the only attempt's error, unchanged")
		assert.Zero(t, took)
		assert.Equal(t, 1, b.Calls())
		assert.Equal(t, budgettest.Counts{Deposits: 1}, budget.Counts())
	})
}

// Two services wrapped by one layer learn their own percentiles and share
// the layer's budget.
func TestHedge_EachWrappedServiceLearnsItsOwnDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := budgettest.New(10)
		layer, err := hedge.NewLayer(hedge.Config[string, string]{
			Hedgeable: always, Budget: budget, Delay: time.Second,
			Quantile: 1, Window: 1, MinSamples: 1,
		})
		require.NoError(t, err)
		fast := newBackend(step{latency: 2 * ms}, step{latency: time.Second}, step{latency: ms})
		slow := newBackend(step{latency: 7 * ms}, step{latency: time.Second}, step{latency: ms})
		fastSvc, slowSvc := layer.Wrap(fast), layer.Wrap(slow)

		_, _, _ = call(fastSvc, context.Background())
		_, _, _ = call(slowSvc, context.Background())
		_, tookFast, err := call(fastSvc, context.Background())
		require.NoError(t, err)
		_, tookSlow, err := call(slowSvc, context.Background())
		require.NoError(t, err)

		assert.Equal(t, 3*ms, tookFast, "hedged at its own 2ms")
		assert.Equal(t, 8*ms, tookSlow, "hedged at its own 7ms")
		assert.Equal(t, budgettest.Counts{Deposits: 4, Granted: 2}, budget.Counts())
	})
}

// contexts is an inner service that records each attempt's context. The
// original waits to be cancelled; every hedge answers at once.
type contexts struct {
	mu   sync.Mutex
	ctxs []context.Context // guarded by mu
}

func (c *contexts) Call(ctx context.Context, req string) (string, error) {
	c.mu.Lock()
	c.ctxs = append(c.ctxs, ctx)
	n := len(c.ctxs)
	c.mu.Unlock()
	if n == 1 {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return req, nil
}

func (c *contexts) get() []context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ctxs)
}

func TestHedge_EachAttemptHasItsOwnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &contexts{}
		svc, err := wrap.Service(rampart.Service[string, string](inner), hedge.NewLayer, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
		})
		require.NoError(t, err)

		resp, err := svc.Call(context.Background(), "req")

		require.NoError(t, err)
		assert.Equal(t, "req", resp)
		ctxs := inner.get()
		require.Len(t, ctxs, 2)
		assert.NotEqual(t, ctxs[0], ctxs[1])
		assert.ErrorIs(t, ctxs[0].Err(), context.Canceled, "the loser is cancelled")
		assert.ErrorIs(t, ctxs[1].Err(), context.Canceled, "without Detach the winner's context ends with Call")
	})
}

func TestHedge_DetachHandsTheWinnersContextToItsResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &contexts{}
		var release context.CancelFunc
		svc, err := wrap.Service(rampart.Service[string, string](inner), hedge.NewLayer, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
			Detach: func(resp string, cancel context.CancelFunc) string {
				release = cancel
				return resp + " (detached)"
			},
		})
		require.NoError(t, err)

		resp, err := svc.Call(context.Background(), "req")

		require.NoError(t, err)
		assert.Equal(t, "req (detached)", resp)
		ctxs := inner.get()
		require.Len(t, ctxs, 2)
		assert.ErrorIs(t, ctxs[0].Err(), context.Canceled, "the loser is cancelled")
		assert.NoError(t, ctxs[1].Err(), "the winner's context lives on with its response")
		require.NotNil(t, release)
		release()
		assert.ErrorIs(t, ctxs[1].Err(), context.Canceled)
	})
}
