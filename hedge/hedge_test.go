package hedge_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/retry"
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

func TestHedge_HG1_PanicInOriginalAttemptReachesCaller(t *testing.T) {
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

// blowup scripts an attempt that panics with value, or exits its
// goroutine with runtime.Goexit when value is nil, once after has passed.
type blowup struct {
	after time.Duration
	value any
}

// blowingUp is an inner service whose attempts numbered in at (0 for the
// original, in the order they arrive) blow up as scripted and log it in
// b's log; the others go to b.
func blowingUp(b *backend, at map[int]blowup) rampart.Service[string, string] {
	var n atomic.Int32
	return rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		k := int(n.Add(1) - 1)
		bu, ok := at[k]
		if !ok {
			return b.Call(ctx, req)
		}
		time.Sleep(bu.after)
		b.logf("blow up attempt %d", k)
		if bu.value == nil {
			runtime.Goexit()
		}
		panic(bu.value)
	})
}

// ending is how a call made on a goroutine of its own ended.
type ending struct {
	panicked any  // the recovered value
	exited   bool // runtime.Goexit
	took     time.Duration
}

// callEnding calls svc on a goroutine of its own, which survives neither
// a panic nor runtime.Goexit, and says how the call ended.
func callEnding(svc rampart.Service[string, string], ctx context.Context) ending {
	var e ending
	done := make(chan struct{})
	start := time.Now()
	go func() {
		returned := false
		defer close(done)
		defer func() {
			e.panicked = recover()
			e.exited = !returned && e.panicked == nil
			e.took = time.Since(start)
		}()
		_, _ = svc.Call(ctx, "req")
		returned = true
	}()
	<-done
	return e
}

// The value a hedge panicked with reaches the caller as a
// *rampart.PanicError holding it and the hedge's stack, once the original
// has been cancelled and awaited; before, the panic ended the program
// from the hedge's goroutine.
func TestHedge_HG1_PanicInHedgeReachesCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms})
		errBoom := errors.New("boom")
		var d discards
		svc, err := wrap.Service(blowingUp(b, map[int]blowup{1: {after: 5 * ms, value: errBoom}}), hedge.NewLayer, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms, Discard: d.Discard,
		})
		require.NoError(t, err)

		e := callEnding(svc, context.Background())

		pe, ok := e.panicked.(*rampart.PanicError)
		require.True(t, ok, "panic value %#v", e.panicked)
		assert.Same(t, errBoom, pe.Value)
		assert.ErrorIs(t, pe, errBoom)
		assert.Contains(t, string(pe.Stack), "blowingUp", "the stack of the hedge's goroutine, where it panicked")
		assert.Contains(t, pe.Error(), "boom")
		assert.Equal(t, 15*ms, e.took)
		assert.Equal(t, []string{"0s start 0", "15ms blow up attempt 1", "15ms cancelled 0"}, b.Log())
		assert.Zero(t, b.inflight.Load(), "the original was awaited before the panic went on")
		assert.Equal(t, []string{""}, d.got(), "the original's cancelled response")
	})
}

// A panic ends the call even after another attempt was accepted: the
// answer goes to Discard, as it does when the original panics after a
// hedge has won, and the caller gets the panic when the panicking attempt
// returns (here it ignores its cancelled context).
func TestHedge_HG1_PanicWinsOverAnAcceptedAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 15 * ms})
		var d discards
		inner := blowingUp(b, map[int]blowup{1: {after: 20 * ms, value: "late boom"}})
		svc, err := wrap.Service(inner, hedge.NewLayer, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms, Discard: d.Discard,
		})
		require.NoError(t, err)

		e := callEnding(svc, context.Background())

		pe, ok := e.panicked.(*rampart.PanicError)
		require.True(t, ok, "panic value %#v", e.panicked)
		assert.Equal(t, "late boom", pe.Value)
		assert.Equal(t, 30*ms, e.took)
		assert.Equal(t, []string{"req#0"}, d.got(), "the accepted answer, not returned")
	})
}

// A hedge that exits its goroutine (t.FailNow in a test double) makes the
// caller's goroutine exit too, after the original is awaited, as if the
// copy had run there; before, the call went on as if the copy had never
// returned.
func TestHedge_HG1_GoexitInHedgeEndsTheCallersGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms})
		svc, err := wrap.Service(blowingUp(b, map[int]blowup{1: {after: 5 * ms}}), hedge.NewLayer, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
		})
		require.NoError(t, err)

		e := callEnding(svc, context.Background())

		assert.Equal(t, ending{exited: true, took: 15 * ms}, e)
		assert.Equal(t, []string{"0s start 0", "15ms blow up attempt 1", "15ms cancelled 0"}, b.Log())
	})
}

// When two attempts panic, the caller sees the first panic of the call,
// whichever attempt it was on; the second is dropped (a crash would print
// both when the original's came second).
func TestHedge_HG1_TwoPanics_TheFirstReachesTheCaller(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   map[int]blowup
		want any
		took time.Duration
	}{
		{
			name: "hedge first",
			at:   map[int]blowup{0: {after: 20 * ms, value: "original"}, 1: {after: 5 * ms, value: "copy"}},
			want: "copy", took: 20 * ms,
		},
		{
			name: "original first",
			at:   map[int]blowup{0: {after: 12 * ms, value: "original"}, 1: {after: 5 * ms, value: "copy"}},
			want: "original", took: 15 * ms,
		},
		{
			name: "two hedges",
			at:   map[int]blowup{0: {after: 50 * ms, value: "original"}, 1: {after: 30 * ms, value: "copy 1"}, 2: {after: 5 * ms, value: "copy 2"}},
			want: "copy 2", took: 50 * ms,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc, err := wrap.Service(blowingUp(newBackend(), tc.at), hedge.NewLayer, hedge.Config[string, string]{
					Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms, MaxAttempts: 3,
				})
				require.NoError(t, err)

				e := callEnding(svc, context.Background())

				got := e.panicked
				if pe, ok := got.(*rampart.PanicError); ok {
					got = pe.Value
				}
				assert.Equal(t, tc.want, got)
				assert.Equal(t, tc.took, e.took)
			})
		})
	}
}

// A panic of user code that runs for a hedge on the layer's goroutines
// (the Observer told of the copy, Accept and Discard called for its
// outcome, a Budget's Withdraw on the timer's goroutine) reaches the
// caller as the inner service's does; before, each ended the program.
func TestHedge_HG1_PanicInCallbacksOfAHedgeReachesCaller(t *testing.T) {
	type cfg = hedge.Config[string, string]
	for _, tc := range []struct {
		name string
		cfg  func(*cfg)
	}{
		{name: "Observer", cfg: func(c *cfg) {
			c.Observer = observe.Func(func(_ context.Context, e observe.Event) {
				if e.Kind == observe.HedgeSent {
					panic("callback")
				}
			})
		}},
		{name: "Accept", cfg: func(c *cfg) {
			c.Accept = func(resp string, err error) bool {
				if resp == "req#1" {
					panic("callback")
				}
				return err == nil
			}
		}},
		{name: "Discard", cfg: func(c *cfg) {
			c.Discard = func(resp string) {
				if resp == "req#1" {
					panic("callback")
				}
			}
		}},
		{name: "Budget", cfg: func(c *cfg) { c.Budget = panickyBudget{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The original answers at 30 ms; the copy, sent at 10 ms,
				// at 15 ms: it wins unless something panics for it.
				b := newBackend(step{latency: 30 * ms}, step{latency: 5 * ms})
				c := cfg{Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms}
				if tc.name == "Discard" {
					b = newBackend(step{latency: 15 * ms}, step{latency: 10 * ms, ignoreCtx: true})
				}
				tc.cfg(&c)
				svc := newHedged(t, b, c)

				e := callEnding(svc, context.Background())

				pe, ok := e.panicked.(*rampart.PanicError)
				require.True(t, ok, "panic value %#v", e.panicked)
				assert.Equal(t, "callback", pe.Value)
				assert.Zero(t, b.inflight.Load())
			})
		})
	}
}

// A panic in Accept judging the original's outcome, on the caller's
// goroutine, goes on once the hedges have been cancelled and awaited, as
// the original's own panic does; before, it left the copy running after
// the caller had gone.
func TestHedge_HG1_PanicInAcceptOfTheOriginalAwaitsTheHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 15 * ms}, step{latency: 100 * ms})
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
			Accept: func(resp string, err error) bool {
				if resp == "req#0" {
					panic("callback")
				}
				return err == nil
			},
		})

		e := callEnding(svc, context.Background())

		assert.Equal(t, ending{panicked: "callback", took: 15 * ms}, e)
		assert.Zero(t, b.inflight.Load(), "the copy was awaited before the panic went on")
		assert.Equal(t, []string{"0s start 0", "10ms start 1", "15ms answer 0", "15ms cancelled 1"}, b.Log())
	})
}

// panickyBudget is a user's Budget whose Withdraw panics.
type panickyBudget struct{}

func (panickyBudget) Deposit()       {}
func (panickyBudget) Withdraw() bool { panic("callback") }

// A breaker above a hedge layer counts a hedge's panic as one failure,
// as it counts the original's (CB7), and a retry layer above does not
// retry it: the panic goes through both. Before, the program ended.
func TestHedge_HG1_BreakerAboveCountsAHedgesPanicOnceAndRetryDoesNotRetryIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms})
		var calls atomic.Int32
		inner := blowingUp(b, map[int]blowup{1: {after: 5 * ms, value: "boom"}})
		counted := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			calls.Add(1)
			return inner.Call(ctx, req)
		})
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
		require.NoError(t, err)
		backoff, err := retry.NewConstant(ms)
		require.NoError(t, err)
		svc := rampart.NewBuilder[string, string]().
			With(retry.NewLayer(retry.Config[string, string]{MaxAttempts: 3, Budget: budget.Always, Backoff: backoff})).
			Layer(circuitbreaker.NewLayer[string, string](br, nil)).
			With(hedge.NewLayer(hedge.Config[string, string]{Hedgeable: always, Budget: budget.Always, Delay: 10 * ms})).
			Service(counted)

		e := callEnding(svc, context.Background())

		pe, ok := e.panicked.(*rampart.PanicError)
		require.True(t, ok, "panic value %#v", e.panicked)
		assert.Equal(t, "boom", pe.Value)
		assert.Equal(t, int32(2), calls.Load(), "the original and its copy, once: no retry")
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: 1},
		}, br.State(), "one failure")
	})
}

// In the canonical order, a breaker below the hedge layer (one permit per
// attempt): the copy's panic is one failure of the breaker, recorded on
// the copy's goroutine (CB7), and the original, cancelled because of it,
// is ignored; the caller gets the panic.
func TestHedge_HG1_BreakerBelowCountsTheCopysPanicOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms})
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
		require.NoError(t, err)
		svc := rampart.NewBuilder[string, string]().
			With(hedge.NewLayer(hedge.Config[string, string]{Hedgeable: always, Budget: budget.Always, Delay: 10 * ms})).
			Layer(circuitbreaker.NewLayer[string, string](br, nil)).
			Service(blowingUp(b, map[int]blowup{1: {after: 5 * ms, value: "boom"}}))

		e := callEnding(svc, context.Background())

		pe, ok := e.panicked.(*rampart.PanicError)
		require.True(t, ok, "panic value %#v", e.panicked)
		assert.Equal(t, "boom", pe.Value)
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: 1},
		}, br.State(), "one failure; the cancelled original ignored")
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

// rejecting returns an Accept that rejects the responses of the attempts
// numbered in bad (the backend answers "req#k" to attempt k), as an HTTP
// client rejects a 503.
func rejecting(bad ...string) func(string, error) bool {
	return func(resp string, err error) bool {
		for _, k := range bad {
			if strings.HasSuffix(resp, "#"+k) {
				return false
			}
		}
		return err == nil
	}
}

// detaches records the responses passed to Config.Detach.
type detaches struct{ discards }

func (d *detaches) Detach(resp string, cancel context.CancelFunc) string {
	cancel()
	d.Discard(resp)
	return resp
}

func TestHedge_RejectedFastAnswerDoesNotBeatAcceptedSlowOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms}, step{latency: 5 * ms})
		var discarded discards
		var detached detaches
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
			Accept: rejecting("1"), Discard: discarded.Discard, Detach: detached.Detach,
		})

		resp, took, err := call(svc, context.Background())

		require.NoError(t, err)
		assert.Equal(t, "req#0", resp, "the slow accepted answer, not the fast rejected one")
		assert.Equal(t, 100*ms, took)
		assert.Equal(t, []string{"0s start 0", "10ms start 1", "15ms answer 1", "100ms answer 0"}, b.Log())
		assert.Equal(t, []string{"req#1"}, discarded.got())
		assert.Equal(t, []string{"req#0"}, detached.got())
	})
}

// When no outcome is accepted but some attempt returned a response with a
// nil error, the first such response is the answer, with a nil error; the
// others are discarded. Errors of other attempts are dropped with them.
func TestHedge_NothingAccepted_FirstRejectedResponseReturned(t *testing.T) {
	for _, tc := range []struct {
		name          string
		steps         []step
		accept        func(string, error) bool
		wantResp      string
		wantTook      time.Duration
		wantDiscarded []string
	}{
		{
			name:          "all rejected",
			steps:         []step{{latency: 30 * ms}, {latency: 5 * ms}, {latency: 5 * ms}},
			accept:        rejecting("0", "1", "2"),
			wantResp:      "req#1",
			wantTook:      30 * ms,
			wantDiscarded: []string{"req#2", "req#0"},
		},
		{
			name:          "one rejected, the others failed",
			steps:         []step{{latency: 30 * ms, err: errA}, {latency: 5 * ms, err: errB}, {latency: 5 * ms}},
			accept:        rejecting("2"),
			wantResp:      "req#2",
			wantTook:      30 * ms,
			wantDiscarded: []string{"req#1", "req#0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBackend(tc.steps...)
				var discarded discards
				var detached detaches
				svc := newHedged(t, b, hedge.Config[string, string]{
					Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms, MaxAttempts: 3,
					Accept: tc.accept, Discard: discarded.Discard, Detach: detached.Detach,
				})

				resp, took, err := call(svc, context.Background())

				require.NoError(t, err, "a response is never turned into an error")
				assert.Equal(t, tc.wantResp, resp)
				assert.Equal(t, tc.wantTook, took)
				assert.Equal(t, tc.wantDiscarded, discarded.got())
				assert.Equal(t, []string{tc.wantResp}, detached.got(), "the returned response keeps its context")
				assert.Equal(t, 3, b.Calls())
			})
		})
	}
}

func TestHedge_OnlyAttemptRejected_ReturnedAsItIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 5 * ms})
		var discarded discards
		var detached detaches
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
			Accept: rejecting("0"), Discard: discarded.Discard, Detach: detached.Detach,
		})

		resp, took, err := call(svc, context.Background())

		require.NoError(t, err)
		assert.Equal(t, "req#0", resp)
		assert.Equal(t, 5*ms, took, "a rejected answer is a failure: it is not hedged")
		assert.Equal(t, 1, b.Calls())
		assert.Empty(t, discarded.got())
		assert.Equal(t, []string{"req#0"}, detached.got())
	})
}

// Accept may take an error as the answer (a definitive "not found", say):
// it wins, cancels the others and comes back unchanged, without Detach.
func TestHedge_AcceptedErrorIsTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms}, step{latency: 5 * ms, err: errA})
		var detached detaches
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
			Accept: func(_ string, err error) bool { return err == nil || errors.Is(err, errA) },
			Detach: detached.Detach,
		})

		resp, took, err := call(svc, context.Background())

		assert.Same(t, errA, err)
		assert.Equal(t, "req#1", resp)
		assert.Equal(t, 15*ms, took)
		assert.Equal(t, []string{"0s start 0", "10ms start 1", "15ms answer 1", "15ms cancelled 0"}, b.Log())
		assert.Empty(t, detached.got())
	})
}

func TestHedge_RT11_AllFailedErrorIsATimeoutWhenAnAttemptTimedOut(t *testing.T) {
	tests := []struct {
		name string
		errs []error
		want bool
	}{
		{name: "every attempt timed out", errs: []error{context.DeadlineExceeded, fmt.Errorf("read: %w", os.ErrDeadlineExceeded)}, want: true},
		{name: "one attempt timed out", errs: []error{errors.New("reset"), os.ErrDeadlineExceeded}, want: true},
		{name: "no timeout", errs: []error{errors.New("reset"), context.Canceled}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := &hedge.AllFailedError{Errs: tt.errs}
			assert.Equal(t, tt.want, os.IsTimeout(err), "os.IsTimeout")
			uerr := &url.Error{Op: "Get", URL: "http://example.test", Err: err}
			assert.Equal(t, tt.want, uerr.Timeout(), "url.Error.Timeout")
			var ne net.Error
			require.ErrorAs(t, error(uerr), &ne)
			assert.Equal(t, tt.want, ne.Timeout(), "net.Error.Timeout")
		})
	}
}

// A nil service fails with an error matching rampart.ErrNilService: at
// construction through Wrap, on every call through a layer's Wrap.
func TestHedge_NilService(t *testing.T) {
	cfg := hedge.Config[string, string]{Hedgeable: always, Budget: budgettest.New(0)}
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := hedge.NewLayer(cfg)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "hedge: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}

func TestHedge_RT10_CopyRefusedByTheBreakerIsRefunded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			if calls.Add(1) == 1 {
				time.Sleep(100 * ms) // the original, a HalfOpen breaker's only probe
				return "slow", nil
			}
			return "", &circuitbreaker.OpenError{} // every probe slot taken
		})
		b := budgettest.New(10)
		svc, err := wrap.Service(inner, hedge.NewLayer, hedge.Config[string, string]{Hedgeable: always, Budget: b, Delay: 10 * ms, MaxAttempts: 2})
		require.NoError(t, err)

		resp, err := svc.Call(t.Context(), "req")

		require.NoError(t, err)
		assert.Equal(t, "slow", resp)
		assert.Equal(t, int32(2), calls.Load())
		assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 1, Refunds: 1}, b.Counts(), "the copy the breaker refused gave its token back")
	})
}

// Many goroutines call one hedged service with random latencies, failures
// and rejected answers. Every call gets exactly one answer, every hedge was
// paid for by the budget, and every response that came with a nil error,
// accepted or not, is either returned or discarded.
func TestHedge_Hammer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, perWorker = 32, 100
		var attempts, responses, discarded atomic.Int64
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			attempts.Add(1)
			select {
			case <-time.After(rand.N(30 * time.Millisecond)):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			switch rand.N(10) {
			case 0:
				return "", errors.New("failed " + req)
			case 1:
				responses.Add(1)
				return "rejected " + req, nil
			}
			responses.Add(1)
			return "ok " + req, nil
		})
		shared, err := budget.New(budget.Config{MinPerSecond: budget.NoFloor, Ratio: 0.1})
		require.NoError(t, err)
		bud := budgettest.Over(shared)
		svc, err := wrap.Service(rampart.Service[string, string](inner), hedge.NewLayer, hedge.Config[string, string]{
			Hedgeable:   func(req string) bool { return !strings.HasSuffix(req, "w") },
			Budget:      bud,
			MaxAttempts: 3,
			Delay:       5 * time.Millisecond,
			Quantile:    0.8,
			Window:      64,
			MinSamples:  16,
			Accept: func(resp string, err error) bool {
				return err == nil && strings.HasPrefix(resp, "ok ")
			},
			Discard: func(resp string) {
				if resp != "" {
					discarded.Add(1)
				}
			},
		})
		require.NoError(t, err)

		var answered, returned, hedgeable, wrong atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					req := fmt.Sprintf("%d-%d", w, i)
					if i%7 == 0 {
						req += "w" // not hedgeable
					} else {
						hedgeable.Add(1)
					}
					resp, err := svc.Call(context.Background(), req)
					answered.Add(1)
					switch {
					case err == nil && (resp == "ok "+req || resp == "rejected "+req):
						returned.Add(1)
					case err != nil && resp == "" && strings.Contains(err.Error(), "failed "+req):
					default:
						wrong.Add(1) // an answer that is not this call's
					}
				}
			})
		}
		wg.Wait()

		deposits, granted := bud.Counts().Deposits, bud.Counts().Granted
		calls := int64(workers * perWorker)
		assert.Equal(t, calls, answered.Load(), "every call answered once")
		assert.Zero(t, wrong.Load())
		assert.Equal(t, hedgeable.Load(), deposits, "one deposit per hedgeable call")
		assert.Equal(t, calls+granted, attempts.Load(), "one attempt per call plus one per granted withdrawal")
		assert.LessOrEqual(t, granted, deposits/10, "within the budget's Ratio")
		assert.Positive(t, granted, "the test should hedge")
		assert.Equal(t, responses.Load(), returned.Load()+discarded.Load(), "every response returned or discarded")
	})
}

// Many calls at once, with attempts that panic now and then, on the
// original and on copies, before or after another attempt won: each call
// either returns its own answer or panics with its own panic (the raw
// value when the original's came first, a *rampart.PanicError when a
// copy's did), every response is returned or discarded, and no attempt
// outlives its call (the goroutine check of TestMain; run with -race).
func TestHedge_HG1_HammerWithPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, perWorker = 16, 100
		var inflight, responses, discarded atomic.Int64
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			inflight.Add(1)
			defer inflight.Add(-1)
			time.Sleep(rand.N(30 * time.Millisecond)) // ignores ctx: losers come late
			if rand.N(8) == 0 {
				panic("boom " + req)
			}
			responses.Add(1)
			return "ok " + req, nil
		})
		svc, err := wrap.Service(rampart.Service[string, string](inner), hedge.NewLayer, hedge.Config[string, string]{
			Hedgeable: always, Budget: budget.Always, MaxAttempts: 3, Delay: 5 * time.Millisecond,
			Discard: func(resp string) {
				if resp != "" {
					discarded.Add(1)
				}
			},
		})
		require.NoError(t, err)

		var returned, panicked, wrong atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					req := fmt.Sprintf("%d-%d", w, i)
					func() {
						defer func() {
							v := recover()
							if pe, ok := v.(*rampart.PanicError); ok {
								v = pe.Value
							}
							switch v {
							case nil:
							case "boom " + req:
								panicked.Add(1)
							default:
								wrong.Add(1) // a panic that is not this call's
							}
						}()
						resp, err := svc.Call(context.Background(), req)
						if err != nil || resp != "ok "+req {
							wrong.Add(1)
						}
						returned.Add(1)
					}()
				}
			})
		}
		wg.Wait()

		assert.Equal(t, int64(workers*perWorker), returned.Load()+panicked.Load(), "every call returned or panicked once")
		assert.Zero(t, wrong.Load())
		assert.Positive(t, panicked.Load(), "the test should panic")
		assert.Equal(t, responses.Load(), returned.Load()+discarded.Load(), "every response returned or discarded")
		assert.Zero(t, inflight.Load())
	})
}

func TestHedge_DefaultDelayAndMinSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var steps []step
		for range hedge.DefaultMinSamples - 1 {
			steps = append(steps, step{latency: ms})
		}
		steps = append(steps, step{latency: time.Second}, step{latency: ms}, step{latency: time.Second}, step{latency: ms})
		b := newBackend(steps...)
		svc := newHedged(t, b, hedge.Config[string, string]{Hedgeable: always, Budget: budgettest.New(10), Quantile: 0.5})

		for range hedge.DefaultMinSamples - 1 {
			_, _, err := call(svc, context.Background())
			require.NoError(t, err)
		}
		_, took, err := call(svc, context.Background())
		require.NoError(t, err)
		assert.Equal(t, hedge.DefaultDelay+ms, took, "31 samples: hedged at the default fallback delay")
		_, took, err = call(svc, context.Background())
		require.NoError(t, err)
		assert.Equal(t, 2*ms, took, "32 samples of 1ms: hedged at 1ms")
	})
}

// Outside a bubble, with real time: after calls that hedged, nothing is
// left running.
func TestHedge_NoGoroutineLeft(t *testing.T) {
	defer goleak.VerifyNone(t)
	var calls atomic.Int32
	inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		if calls.Add(1)%2 == 1 {
			<-ctx.Done() // the original waits to be cancelled
			return "", ctx.Err()
		}
		return "hedge", nil
	})
	svc, err := wrap.Service(rampart.Service[string, string](inner), hedge.NewLayer, hedge.Config[string, string]{
		Hedgeable: always, Budget: budgettest.New(budgettest.Unlimited), Delay: time.Millisecond,
	})
	require.NoError(t, err)
	for range 20 {
		resp, err := svc.Call(context.Background(), "req")
		require.NoError(t, err)
		require.Equal(t, "hedge", resp)
	}
}

func TestHedge_EV5_SentAndWon(t *testing.T) {
	ev := func(kind observe.Kind, attempt int) observe.Event {
		e := observe.Event{Source: observe.Hedge, Name: "search", Kind: kind, Attempt: attempt}
		if kind == observe.HedgeSent {
			e.Duration = 10 * ms
		}
		return e
	}
	tests := []struct {
		name  string
		steps []step
		want  []observe.Event
	}{
		{name: "the original answers before the delay", steps: []step{{latency: 5 * ms}}},
		{name: "the first hedge wins", steps: []step{{latency: 100 * ms}, {latency: 5 * ms}}, want: []observe.Event{
			ev(observe.HedgeSent, 2), ev(observe.HedgeWon, 2),
		}},
		{name: "the original wins after two hedges", steps: []step{{latency: 25 * ms}, {latency: 100 * ms}, {latency: 100 * ms}}, want: []observe.Event{
			ev(observe.HedgeSent, 2), ev(observe.HedgeSent, 3), ev(observe.HedgeWon, 1),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec observetest.Recorder
				b := newBackend(tt.steps...)
				svc := newHedged(t, b, hedge.Config[string, string]{
					Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms, MaxAttempts: 3, Name: "search", Observer: &rec,
				})
				_, _, err := call(svc, context.Background())
				require.NoError(t, err)
				require.Equal(t, tt.want, rec.Events())
			})
		})
	}
}

// A loser the layer cancels after it ran at least the delay is recorded as
// slower than every complete latency, so the learned delay does not drop
// because hedging cut the slow attempt short.
func TestHedge_CancelledLoserCountsAsSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(
			step{latency: 10 * ms}, step{latency: 20 * ms}, step{latency: 30 * ms}, step{latency: 40 * ms},
			// Hedged at the median, 20ms; the hedge answers after 5ms and
			// the original is cancelled after 25ms.
			step{latency: time.Second}, step{latency: 5 * ms},
			step{latency: time.Second}, step{latency: ms},
		)
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: time.Second,
			Quantile: 0.5, Window: 4, MinSamples: 4,
		})
		for range 4 {
			_, _, err := call(svc, context.Background())
			require.NoError(t, err)
		}

		_, took, err := call(svc, context.Background())
		require.NoError(t, err)
		assert.Equal(t, 25*ms, took, "hedged at the median of 10..40ms")

		// The window is 30ms, 40ms, 5ms and the cancelled original (at
		// least 25ms, ranked above all): the median is 30ms. Dropping the
		// original would give 20ms, and recording it as 25ms, 25ms.
		_, took, err = call(svc, context.Background())
		require.NoError(t, err)
		assert.Equal(t, 31*ms, took, "hedged at 30ms")
	})
}

// With a learned 95th percentile and lognormal latencies (median 11ms,
// sigma 1), about 5% of requests are hedged, as the package doc says: the
// 12% this measured when cancelled losers were not recorded is gone. The
// generator is seeded, so the result is the same on every run; the margin
// is about one standard deviation of the 3000 calls counted.
func TestHedge_LearnedP95HedgesAboutFivePercent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		var mu sync.Mutex
		inner := rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
			mu.Lock()
			d := time.Duration(math.Exp(rng.NormFloat64())*10e6) + ms
			mu.Unlock()
			select {
			case <-time.After(d):
				return req, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		})
		budget := budgettest.New(budgettest.Unlimited)
		svc, err := wrap.Service(rampart.Service[int, int](inner), hedge.NewLayer, hedge.Config[int, int]{
			Hedgeable: func(int) bool { return true }, Budget: budget, Quantile: 0.95,
		})
		require.NoError(t, err)

		for i := range 4000 {
			if i == 1000 { // the window is warm
				budget.Reset()
			}
			_, err := svc.Call(context.Background(), i)
			require.NoError(t, err)
		}

		counts := budget.Counts()
		share := float64(counts.Granted) / float64(counts.Deposits)
		assert.InDelta(t, 0.05, share, 0.005, "share of requests hedged")
	})
}

// Each copy says which attempt it is, as a retry does, so that a retry
// layer at the hop below makes one attempt for it and no more (Envoy's
// x-envoy-attempt-count and gRPC's grpc-previous-rpc-attempts count hedges
// with retries). Here the original's retry layer makes its 3 attempts and
// each of the two copies' makes 1: 5 attempts at the dependency, not 9.
func TestHedge_PG7_CopiesCarryTheirAttemptNumber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu       sync.Mutex
			attempts []int
		)
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			mu.Lock()
			attempts = append(attempts, rampart.AttemptOf(ctx))
			mu.Unlock()
			time.Sleep(30 * ms)
			return "", errors.New("unavailable")
		})
		backoff, err := retry.NewConstant(ms)
		require.NoError(t, err)
		svc := rampart.NewBuilder[string, string]().
			With(hedge.NewLayer(hedge.Config[string, string]{Hedgeable: always, Budget: budget.Always, Delay: 10 * ms, MaxAttempts: 3})).
			With(retry.NewLayer(retry.Config[string, string]{MaxAttempts: 3, Budget: budget.Always, Backoff: backoff})).
			Service(inner)

		_, err = svc.Call(t.Context(), "req")

		require.Error(t, err)
		mu.Lock()
		defer mu.Unlock()
		// 0 ms: the original (no attempt number); 10 ms: copy 2; 20 ms:
		// copy 3; 31 ms and 62 ms: the original's retries 2 and 3. The
		// copies' retry layers stop at once (retry.ErrUpstreamRetry).
		assert.Equal(t, []int{0, 2, 3, 2, 3}, attempts)

		// A request that is already attempt 2 at the caller numbers its
		// copies from there.
		attempts = attempts[:0]
		mu.Unlock()
		_, err = svc.Call(rampart.WithAttempt(t.Context(), 2), "req")
		mu.Lock()
		require.Error(t, err)
		assert.Equal(t, []int{2, 3, 4}, attempts)
	})
}

// An attempt whose error says "do not retry" (a hint of rampart.Forever:
// a negative grpc-retry-pushback-ms) or that a breaker below refused ends
// the hedging of its call: no copy follows it (gRFC A6), and the attempts
// in flight go on; before, the third copy was sent 10 ms later all the
// same.
func TestHedge_PG7_RefusingErrorStopsFurtherCopies(t *testing.T) {
	for name, refusal := range map[string]error{
		"do not retry":    pushback(rampart.Forever),
		"breaker is open": &circuitbreaker.OpenError{},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBackend(step{latency: 100 * ms}, step{latency: 0, err: refusal}, step{latency: 0})
				bud := budgettest.New(budgettest.Unlimited)
				svc := newHedged(t, b, hedge.Config[string, string]{Hedgeable: always, Budget: bud, Delay: 10 * ms, MaxAttempts: 3})
				start := time.Now()

				resp, err := svc.Call(t.Context(), "req")

				require.NoError(t, err)
				assert.Equal(t, "req#0", resp, "the original answers")
				assert.Equal(t, 100*ms, time.Since(start))
				assert.Equal(t, 2, b.Calls(), "no third copy")
				assert.Equal(t, int64(1), bud.Counts().Granted)
			})
		})
	}
	// A rejected answer that Config.Hint says "never" of (an HTTP 503
	// with Rampart-Retry: no) refuses copies too.
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms}, step{latency: 0}, step{latency: 0})
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budget.Always, Delay: 10 * ms, MaxAttempts: 3,
			Accept: func(resp string, err error) bool { return err == nil && resp != "req#1" },
			Hint: func(resp string, _ error) (time.Duration, bool) {
				return rampart.Forever, resp == "req#1"
			},
		})
		resp, err := svc.Call(t.Context(), "req")
		require.NoError(t, err)
		assert.Equal(t, "req#0", resp)
		assert.Equal(t, 2, b.Calls())
	})
	// A finite hint is no refusal: the third copy is sent.
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms}, step{latency: 0, err: pushback(time.Second)}, step{latency: 5 * ms})
		svc := newHedged(t, b, hedge.Config[string, string]{Hedgeable: always, Budget: budget.Always, Delay: 10 * ms, MaxAttempts: 3})
		resp, err := svc.Call(t.Context(), "req")
		require.NoError(t, err)
		assert.Equal(t, "req#2", resp)
		assert.Equal(t, 3, b.Calls())
	})
}

// A hedge the budget refuses leaves the call to its original attempt,
// which returns as soon as it fails: the call does not hang until its
// deadline waiting for a copy that was never sent (grpc-java#7222).
func TestHedge_RT6_ThrottledHedgeDoesNotWaitForTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unavailable := errors.New("unavailable")
		b := newBackend(step{latency: 15 * ms, err: unavailable})
		bud := budgettest.New(0)
		svc := newHedged(t, b, hedge.Config[string, string]{Hedgeable: always, Budget: bud, Delay: 10 * ms})
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		start := time.Now()

		_, err := svc.Call(ctx, "req")

		assert.Same(t, unavailable, err, "the only attempt's error, unchanged")
		assert.Equal(t, 15*ms, time.Since(start))
		assert.Equal(t, budgettest.Counts{Deposits: 1, Refused: 1}, bud.Counts())
	})
}

// A caller's deadline shorter than the hedge delay sends no copy and asks
// the budget for nothing: the call ends at the deadline with the
// deadline's error.
func TestHedge_RT10_DeadlineBeforeTheDelaySendsNoCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: time.Second})
		bud := budgettest.New(budgettest.Unlimited)
		svc := newHedged(t, b, hedge.Config[string, string]{Hedgeable: always, Budget: bud, Delay: 50 * ms})
		ctx, cancel := context.WithTimeout(t.Context(), 30*ms)
		defer cancel()
		start := time.Now()

		_, err := svc.Call(ctx, "req")

		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 30*ms, time.Since(start))
		assert.Equal(t, 1, b.Calls())
		assert.Equal(t, budgettest.Counts{Deposits: 1}, bud.Counts())
	})
}
