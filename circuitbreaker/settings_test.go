package circuitbreaker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

// A Tune during Open keeps the period's deadline to the nanosecond; the
// new cool-down is the next trip's.
func TestTune_CB24_OpenKeepsItsCoolDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		b, err := circuitbreaker.New(circuitbreaker.Config{Name: "b", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 10 * time.Second, Observer: &rec})
		require.NoError(t, err)
		p, err := b.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBoom) // trips now, until now+10s
		time.Sleep(3 * time.Second)
		require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Second}))
		_, err = b.TryAcquire()
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, 7*time.Second, oe.RetryAfter(), "the deadline is the one it opened with")
		time.Sleep(7*time.Second - time.Nanosecond)
		_, err = b.TryAcquire()
		require.ErrorIs(t, err, circuitbreaker.ErrOpen, "a nanosecond before the end")
		time.Sleep(time.Nanosecond)
		p, err = b.TryAcquire()
		require.NoError(t, err, "the probe at the deadline")
		p.Failure(errBoom) // re-opens with the new constant cool-down
		_, err = b.TryAcquire()
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, time.Second, oe.RetryAfter())
		var kinds []observe.Kind
		for _, e := range rec.Events() {
			if e.Kind == observe.Tuned {
				kinds = append(kinds, e.Kind)
				assert.Equal(t, "b", e.Name)
			}
		}
		assert.Len(t, kinds, 1, "the change is an event")
	})
}

// A growing schedule continues from the current cool-down, brought within
// the new bounds.
func TestTune_CB24_GrowingSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second,
			MaxCoolDown: time.Minute, CoolDownMultiplier: 2})
		require.NoError(t, err)
		fail := func() {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			p.Failure(errBoom)
		}
		fail() // Open 1s
		require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: 5 * time.Second, MaxCoolDown: 8 * time.Second, CoolDownMultiplier: 2}))
		time.Sleep(time.Second)
		fail() // the probe fails: 5s (the current 1s raised to the new floor) doubled, capped at 8s
		_, err = b.TryAcquire()
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, 8*time.Second, oe.RetryAfter())
	})
}

// A HalfOpen period admits probes by the new MaxProbes at once.
func TestTune_CB24_MaxProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second, MaxProbes: 1})
		require.NoError(t, err)
		p, err := b.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBoom)
		time.Sleep(time.Second)
		_, err = b.TryAcquire()
		require.NoError(t, err)
		_, err = b.TryAcquire()
		require.ErrorIs(t, err, circuitbreaker.ErrOpen, "one probe slot")
		require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Second, MaxProbes: 3}))
		for range 2 {
			_, err = b.TryAcquire()
			require.NoError(t, err)
		}
		_, err = b.TryAcquire()
		require.ErrorIs(t, err, circuitbreaker.ErrOpen, "three probe slots")
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
	})
}

// A bad Tuning is New's error, and changes nothing.
func TestTune_CB24_BadTuning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 2 * time.Second})
		require.NoError(t, err)
		assert.EqualError(t, b.Tune(circuitbreaker.Tuning{MaxProbes: 5000}), "circuitbreaker: MaxProbes must be in [0, 1024], got 5000")
		assert.EqualError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Second, MaxCoolDown: time.Millisecond}), "circuitbreaker: MaxCoolDown must be >= CoolDown (1s), got 1ms")
		p, err := b.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBoom)
		_, err = b.TryAcquire()
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, 2*time.Second, oe.RetryAfter(), "the old cool-down")
	})
}

// Tune of a nil *Breaker is an error, not a panic.
func TestTune_CB24_NilBreaker(t *testing.T) {
	var b *circuitbreaker.Breaker
	assert.EqualError(t, b.Tune(circuitbreaker.Tuning{}), "circuitbreaker: Tune of a nil *Breaker")
}

// Tune is safe while calls flow (run with -race), and a zero Breaker can
// be tuned; afterwards it runs on the last Tune.
func TestTune_CB24_WhileCallsFlow(t *testing.T) {
	var b circuitbreaker.Breaker
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 500 {
				if i == 0 {
					require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Duration(j%3) * time.Millisecond, MaxProbes: 1 + j%4}))
					continue
				}
				if p, err := b.TryAcquire(); err == nil {
					if j%3 == 0 {
						p.Failure(errBoom)
					} else {
						p.Success()
					}
				}
			}
		})
	}
	wg.Wait()
	// Afterwards the breaker runs on the last Tune: a trip's cool-down is
	// the new CoolDown, to the nanosecond.
	b.Reset()
	require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Hour}))
	var trips []circuitbreaker.Transition
	b.Subscribe(func(tr circuitbreaker.Transition) { trips = append(trips, tr) })
	for range circuitbreaker.DefaultFailures {
		p, err := b.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBoom)
	}
	require.Len(t, trips, 1)
	assert.Equal(t, circuitbreaker.Open, trips[0].To)
	assert.Equal(t, time.Hour, trips[0].RetryAfter)
}

// tunedEvents returns the Calls and Failures of each Tuned event.
func tunedEvents(rec *observetest.Recorder) [][2]int {
	var out [][2]int
	for _, e := range rec.Events() {
		if e.Kind == observe.Tuned {
			out = append(out, [2]int{e.Calls, e.Failures})
		}
	}
	return out
}

// A Consecutive threshold changed while Closed keeps the run of failures;
// the change does not trip by itself, the next failure is judged by the
// new threshold.
func TestTune_CB24_ConsecutiveKeepsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 5}, Observer: &rec})
		fail(t, b, 3, errBoom)
		require.NoError(t, b.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.Consecutive{Failures: 2}}))
		s := b.State()
		assert.Equal(t, circuitbreaker.Closed, s.State, "a change never trips by itself")
		assert.Equal(t, 3, s.Counts.ConsecutiveFailures)
		assert.Equal(t, [][2]int{{3, 3}}, tunedEvents(&rec), "the event carries the counts kept")
		fail(t, b, 1, errBoom)
		assert.Equal(t, circuitbreaker.Open, b.State().State, "4 >= 2")
	})
}

// A Consecutive.Successes changed in HalfOpen judges the next probe by it.
func TestTune_CB24_HalfOpenProbesJudgedByTheNewRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1, Successes: 3}, CoolDown: time.Second})
		fail(t, b, 1, errBoom)
		time.Sleep(time.Second)
		succeed(t, b, 1)
		require.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Second, Policy: circuitbreaker.Consecutive{Failures: 1, Successes: 2}}))
		assert.Equal(t, 1, b.State().ProbesSucceeded, "the tally is kept")
		succeed(t, b, 1)
		assert.Equal(t, circuitbreaker.Closed, b.State().State, "2 of the new 2")
	})
}

// A policy change during Open keeps the period's deadline to the
// nanosecond.
func TestTune_CB24_PolicyChangeDuringOpenKeepsTheCoolDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 4}}, CoolDown: 10 * time.Second})
		fail(t, b, 4, errBoom)
		time.Sleep(2*time.Second + time.Nanosecond)
		require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Hour, Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 8}, Ratio: 0.9}}))
		assert.Equal(t, 8*time.Second-time.Nanosecond, openErr(t, b).RetryAfter())
		time.Sleep(8*time.Second - 2*time.Nanosecond)
		assert.Equal(t, time.Nanosecond, openErr(t, b).RetryAfter())
		time.Sleep(time.Nanosecond)
		succeed(t, b, 1)
		assert.Equal(t, circuitbreaker.Closed, b.State().State, "one probe of the Ratio 0.9 succeeded")
	})
}

// A count window keeps its most recent calls, as many as the new Size
// holds; the new Ratio judges them at the next outcome.
func TestTune_CB24_CountWindowKeepsTheNewestCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		b := newBreaker(t, circuitbreaker.Config{Observer: &rec,
			Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 10, MinCalls: 4}, Ratio: 0.6}})
		fail(t, b, 1, errBoom)
		succeed(t, b, 1)
		fail(t, b, 1, errBoom)
		succeed(t, b, 3) // F S F S S S
		require.Equal(t, circuitbreaker.Counts{Calls: 6, Failures: 2}, b.State().Counts)

		require.NoError(t, b.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 4}, Ratio: 0.6}}))
		assert.Equal(t, circuitbreaker.Counts{Calls: 4, Failures: 1}, b.State().Counts, "F S S S: the newest four")
		require.NoError(t, b.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 8, MinCalls: 4}, Ratio: 0.25}}))
		assert.Equal(t, circuitbreaker.Counts{Calls: 4, Failures: 1}, b.State().Counts, "a larger window keeps them all")
		assert.Equal(t, circuitbreaker.Closed, b.State().State, "1 of 4 reaches 0.25, but only the next outcome is judged")
		assert.Equal(t, [][2]int{{4, 1}, {4, 1}}, tunedEvents(&rec))
		succeed(t, b, 1) // F S S S S: 1 of 5 = 0.2
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		fail(t, b, 1, errBoom) // F S S S S F: 2 of 6
		assert.Equal(t, circuitbreaker.Open, b.State().State, "2 of 6 reaches the new 0.25, not the old 0.6")
	})
}

// Tuned events reach the Observer in the order the changes were applied,
// one at a time: a Tune made while the Observer is still handling an
// earlier Tune's event is reported after it.
func TestTune_CB24_EventsInTheOrderApplied(t *testing.T) {
	var (
		mu      sync.Mutex
		got     [][2]int
		entered = make(chan struct{})
		release = make(chan struct{})
		calls   atomic.Int32
	)
	obs := observe.Func(func(_ context.Context, e observe.Event) {
		if e.Kind != observe.Tuned {
			return
		}
		if calls.Add(1) == 1 {
			close(entered)
			<-release
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, [2]int{e.Calls, e.Failures})
	})
	b := newBreaker(t, circuitbreaker.Config{Observer: obs, Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 10}}})
	fail(t, b, 2, errBoom)
	succeed(t, b, 4) // F F S S S S
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, b.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 5}}}))
	}()
	<-entered // the first change is applied, its event being handled
	require.NoError(t, b.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 2}}}))
	close(release)
	<-done
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, [][2]int{{5, 1}, {2, 0}}, got, "F S S S S, then S S")
}

// An Observer may call Tune from a Tuned event: the nested change is
// reported after the event being handled, without deadlock. A panic in
// the Observer goes to ListenerPanic: Tune succeeds and the breaker
// keeps working.
func TestTune_CB24_ObserverMayTuneAndPanic(t *testing.T) {
	var (
		b       *circuitbreaker.Breaker
		got     []int
		panics  []any
		nested  atomic.Bool
		explode atomic.Bool
	)
	obs := observe.Func(func(_ context.Context, e observe.Event) {
		if e.Kind != observe.Tuned {
			return
		}
		got = append(got, e.Calls)
		if explode.Load() {
			panic("observer")
		}
		if nested.CompareAndSwap(false, true) {
			assert.Equal(t, circuitbreaker.Closed, b.State().State)
			assert.NoError(t, b.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 1}}}))
			got = append(got, -1) // the nested Tune returned before its event
		}
	})
	b = newBreaker(t, circuitbreaker.Config{Observer: obs, Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 10}},
		ListenerPanic: func(v any, _ []byte) { panics = append(panics, v) }})
	succeed(t, b, 4)
	require.NoError(t, b.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 3}}}))
	assert.Equal(t, []int{3, -1, 1}, got, "the nested change after the one being handled")

	explode.Store(true)
	require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Minute}))
	assert.Equal(t, []any{"observer"}, panics)
	succeed(t, b, 1)
	assert.Equal(t, circuitbreaker.Closed, b.State().State)
	require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Minute}))
	assert.Equal(t, []any{"observer", "observer"}, panics, "the next event is delivered too")
}

// A time window keeps its buckets, and the successes counted without the
// lock, when Period and Buckets are unchanged; when either changes it
// starts empty, and the event says so.
func TestTune_CB24_TimeWindowKeptOrEmptied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		win := circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: 10}
		b := newBreaker(t, circuitbreaker.Config{Observer: &rec, Policy: circuitbreaker.FailureRate{Window: win, Ratio: 0.5}})
		fail(t, b, 1, errBoom)
		time.Sleep(1500 * time.Millisecond) // inside a bucket: successes take the lock-free path
		succeed(t, b, 5)
		fail(t, b, 1, errBoom)
		require.Equal(t, circuitbreaker.Counts{Calls: 7, Failures: 2}, b.State().Counts)

		win.MinCalls = 8
		require.NoError(t, b.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.FailureRate{Window: win, Ratio: 0.25}}))
		assert.Equal(t, circuitbreaker.Counts{Calls: 7, Failures: 2}, b.State().Counts, "same Period and Buckets: kept")
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		succeed(t, b, 1) // 2 of 8 reaches 0.25 with 8 calls: a success may trip
		assert.Equal(t, circuitbreaker.Open, b.State().State, "judged by the new Ratio and MinCalls")

		b2 := newBreaker(t, circuitbreaker.Config{Observer: &rec, Policy: circuitbreaker.FailureRate{Window: win, Ratio: 0.5}})
		rec.Reset()
		fail(t, b2, 3, errBoom)
		win.Period = 20 * time.Second
		require.NoError(t, b2.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.FailureRate{Window: win, Ratio: 0.5}}))
		assert.Equal(t, circuitbreaker.Counts{}, b2.State().Counts, "a new Period: emptied")
		assert.Equal(t, [][2]int{{0, 0}}, tunedEvents(&rec))
		time.Sleep(5 * time.Second)
		fail(t, b2, 4, errBoom)
		succeed(t, b2, 3)
		fail(t, b2, 1, errBoom)
		assert.Equal(t, circuitbreaker.Open, b2.State().State, "5 of 8 in the new window, 8 >= MinCalls")
	})
}

// Tuning.Policy of another kind, or a window of another kind, is refused
// and changes nothing.
func TestTune_CB24_PolicyOfAnotherKind(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: 3 * time.Second})
	assert.EqualError(t, b.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.FailureRate{}}),
		"circuitbreaker: Tuning.Policy: must be a Consecutive, as the breaker's policy is (got a FailureRate)")
	assert.EqualError(t, b.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.Consecutive{Failures: -1}}),
		"circuitbreaker: Consecutive.Failures must be >= 0, got -1")
	fail(t, b, 2, errBoom)
	assert.Equal(t, 3*time.Second, openErr(t, b).RetryAfter().Round(time.Second), "the old cool-down and threshold")

	fr := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{}})
	assert.EqualError(t, fr.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: time.Minute}}}),
		"circuitbreaker: Tuning.Policy: FailureRate.Window cannot change from a count window to a time window while the breaker runs")

	any := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Any(circuitbreaker.Consecutive{}, circuitbreaker.SlowCalls{})})
	assert.EqualError(t, any.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.Any(circuitbreaker.Consecutive{})}),
		"circuitbreaker: Tuning.Policy: must be an Any of 2 policies, as the breaker's policy is (got an Any)")
	require.NoError(t, any.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.Any(circuitbreaker.Consecutive{Failures: 7}, circuitbreaker.SlowCalls{Threshold: time.Second})}))

	fn := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.TripFunc(func(circuitbreaker.Counts) bool { return false })})
	assert.ErrorContains(t, fn.Tune(circuitbreaker.Tuning{Policy: circuitbreaker.Consecutive{}}),
		"circuitbreaker: Tuning.Policy: the breaker's policy (tracker ")
}

// Any and SuccessRate pass each policy's settings on, in order.
func TestTune_CB24_AnyAndSuccessRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := func(failures int) circuitbreaker.Policy {
			return circuitbreaker.SuccessRate{Trip: circuitbreaker.Any(circuitbreaker.Consecutive{Failures: failures}, circuitbreaker.FailureRate{}), Probes: 1}
		}
		b := newBreaker(t, circuitbreaker.Config{Policy: p(5)})
		fail(t, b, 2, errBoom)
		require.NoError(t, b.Tune(circuitbreaker.Tuning{Policy: p(3)}))
		fail(t, b, 1, errBoom)
		assert.Equal(t, circuitbreaker.Open, b.State().State, "the third failure reaches the new 3")
	})
}

// Policy changes while calls flow on a time window (run with -race), and
// the breaker judges by the last one afterwards.
func TestTune_CB24_PolicyWhileCallsFlow(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{CoolDown: circuitbreaker.Immediate,
		Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: 100 * time.Millisecond}}})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 500 {
				if i == 0 {
					w := circuitbreaker.Window{Period: time.Duration(1+j%2) * 100 * time.Millisecond, MinCalls: 1 + j%30}
					require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: circuitbreaker.Immediate, Policy: circuitbreaker.FailureRate{Window: w, Ratio: 0.1 + float64(j%9)/10}}))
					continue
				}
				if p, err := b.TryAcquire(); err == nil {
					if j%7 == 0 {
						p.Failure(errBoom)
					} else {
						p.Success()
					}
				}
			}
		})
	}
	wg.Wait()
	// Afterwards the breaker judges by the last Tune: a change of Period
	// empties the window, and three failures of three calls trip it.
	b.Reset()
	require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Hour,
		Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: time.Hour, MinCalls: 3}, Ratio: 0.5}}))
	for range 2 {
		p, err := b.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBoom)
	}
	assert.Equal(t, circuitbreaker.Closed, b.State().State, "below MinCalls")
	p, err := b.TryAcquire()
	require.NoError(t, err)
	p.Failure(errBoom)
	assert.Equal(t, circuitbreaker.Open, b.State().State)
}

// A tuned breaker's Closed success costs what an untuned one's does: Tune
// adds nothing to the path.
func BenchmarkTune_ClosedSuccessAfterTune(b *testing.B) {
	for _, tuned := range []bool{false, true} {
		br, err := circuitbreaker.New(circuitbreaker.Config{})
		require.NoError(b, err)
		if tuned {
			require.NoError(b, br.Tune(circuitbreaker.Tuning{CoolDown: time.Second, MaxProbes: 2}))
		}
		b.Run(map[bool]string{false: "untuned", true: "tuned"}[tuned], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, _ := br.TryAcquire()
				p.Success()
			}
		})
	}
}
