package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

func TestBreaker_CB1_LazyHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		goroutines := runtime.NumGoroutine()
		b := newBreaker(t, circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 2},
			CoolDown: 10 * time.Second,
		})
		rec := record(b)
		start := time.Now()

		fail(t, b, 2, errBoom)
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.Open, RetryAfter: 10 * time.Second, Cause: errBoom,
		}, b.State())
		// No more than before: the count is the process's, and a goroutine
		// an earlier test left winding down may end meanwhile (it did,
		// at a load of 20: 4 where 5 were counted).
		assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "the breaker starts no goroutine")

		time.Sleep(4 * time.Second)
		assert.Equal(t, 6*time.Second, b.State().RetryAfter)

		time.Sleep(6 * time.Second)
		// The cool-down has passed: State reports HalfOpen before any call,
		// but nothing has transitioned yet.
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom}, b.State())
		assert.Equal(t, []string{"closed>open"}, rec.edges())

		time.Sleep(time.Second) // the first acquire comes later than the end of the cool-down
		p, err := b.TryAcquire()
		require.NoError(t, err, "the caller that performs Open>HalfOpen is a probe")
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom, ProbesInFlight: 1}, b.State())
		require.True(t, p.Success())

		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, b.State())
		assert.Equal(t, []string{"closed>open", "open>half-open", "half-open>closed"}, rec.edges())
		got := rec.all()
		assert.Equal(t, start, got[0].Time)
		assert.Equal(t, errBoom, got[0].Cause)
		assert.Equal(t, start.Add(10*time.Second), got[1].Time, "HalfOpen began when the cool-down ended")
		assert.Equal(t, start.Add(11*time.Second), got[2].Time)
	})
}

func TestBreaker_CB2_OpenFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 1},
			CoolDown: 10 * time.Second,
		})
		be := &backend{err: errBoom}
		svc := guard(b, be)

		_, err := svc.Call(t.Context(), "a")
		require.ErrorIs(t, err, errBoom)
		require.Equal(t, int64(1), be.calls.Load())

		time.Sleep(2500 * time.Millisecond)
		_, err = svc.Call(t.Context(), "b")
		require.ErrorIs(t, err, circuitbreaker.ErrOpen)
		assert.ErrorIs(t, err, errBoom, "a rejection carries the failure that tripped the breaker")
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, 7500*time.Millisecond, oe.RetryAfter())
		assert.Equal(t, errBoom, oe.Cause)
		assert.Equal(t, 7500*time.Millisecond, oe.RetryAfter())
		assert.Equal(t, "circuitbreaker: open (retry after 7.5s): tripped by: boom", oe.Error())
		assert.Equal(t, int64(1), be.calls.Load(), "the protected call is never invoked")

		// RetryAfter is exact, computed when asked, as State is.
		time.Sleep(time.Microsecond)
		assert.Equal(t, 7500*time.Millisecond-time.Microsecond, oe.RetryAfter(), "the same error, asked later")
		assert.Same(t, oe, openErr(t, b), "one rejection for the whole period")
		assert.Equal(t, 7500*time.Millisecond-time.Microsecond, b.State().RetryAfter)
		time.Sleep(time.Millisecond)
		assert.Equal(t, 7499*time.Millisecond-time.Microsecond, openErr(t, b).RetryAfter())

		// HalfOpen with its only probe slot taken: RetryAfter zero.
		time.Sleep(7499*time.Millisecond - time.Microsecond)
		probe, err := b.TryAcquire()
		require.NoError(t, err)
		oe = openErr(t, b)
		assert.Equal(t, time.Duration(0), oe.RetryAfter())
		assert.Equal(t, errBoom, oe.Cause)
		probe.Ignore()
	})
}

func TestBreaker_CB3_ProbeLimitAndOneTransition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:    circuitbreaker.Consecutive{Failures: 1, Successes: 3},
			CoolDown:  10 * time.Second,
			MaxProbes: 3,
		})
		rec := record(b)
		fail(t, b, 1, errBoom)
		time.Sleep(10 * time.Second)

		// A burst of 64 callers at the end of the cool-down.
		var (
			mu       sync.Mutex
			admitted []*circuitbreaker.Permit
			rejected []*circuitbreaker.OpenError
			wg       sync.WaitGroup
			ready    = make(chan struct{})
		)
		for range 64 {
			wg.Go(func() {
				<-ready
				p, err := b.TryAcquire()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					var oe *circuitbreaker.OpenError
					require.ErrorAs(t, err, &oe)
					rejected = append(rejected, oe)
					return
				}
				admitted = append(admitted, &p)
			})
		}
		close(ready)
		wg.Wait()
		require.Len(t, admitted, 3)
		require.Len(t, rejected, 61)
		for _, oe := range rejected {
			assert.Equal(t, time.Duration(0), oe.RetryAfter())
		}
		assert.Equal(t, []string{"closed>open", "open>half-open"}, rec.edges(), "exactly one transition")
		assert.Equal(t, 3, b.State().ProbesInFlight)

		// Successes close only when the policy says so (3 here).
		assert.True(t, admitted[0].Success())
		assert.True(t, admitted[1].Success())
		s := b.State()
		assert.Equal(t, circuitbreaker.HalfOpen, s.State)
		assert.Equal(t, 2, s.ProbesSucceeded)
		assert.Equal(t, 1, s.ProbesInFlight)
		// A probe failure re-opens with a fresh cool-down.
		time.Sleep(time.Second)
		assert.True(t, admitted[2].Failure(errNotFound))
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.Open, RetryAfter: 10 * time.Second, Cause: errNotFound,
		}, b.State())
		assert.Equal(t, []string{"closed>open", "open>half-open", "half-open>open"}, rec.edges())
	})
}

func TestBreaker_CB3_SuccessesClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 1, Successes: 2},
			CoolDown: time.Second,
		})
		fail(t, b, 1, errBoom)
		time.Sleep(time.Second)
		succeed(t, b, 1) // MaxProbes 1: the second probe comes after the first
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		succeed(t, b, 1)
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
	})
}

func TestBreaker_CB4_OneBreakerManyServices(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 3}, CoolDown: time.Hour})
	bad := &backend{err: errBoom}
	good := &backend{}
	svcA, svcB := guard(b, bad), guard(b, good)

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, err := svcA.Call(context.Background(), "x")
			assert.ErrorIs(t, err, errBoom)
		})
	}
	wg.Wait()
	for range 10 {
		wg.Go(func() {
			_, err := svcB.Call(context.Background(), "y")
			assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
		})
	}
	wg.Wait()
	assert.Equal(t, int64(0), good.calls.Load(), "a trip seen through A protects B")
	assert.Equal(t, int64(3), bad.calls.Load())
}

func TestBreaker_CB5_PermitFinishedOnce(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
	p, err := b.TryAcquire()
	require.NoError(t, err)
	assert.True(t, p.Failure(errBoom))
	assert.False(t, p.Failure(errBoom), "second finish is a no-op")
	assert.False(t, p.Success())
	assert.False(t, p.Done(errBoom))
	p.Ignore()
	assert.Equal(t, 1, b.State().Counts.ConsecutiveFailures)

	var zero circuitbreaker.Permit
	assert.False(t, zero.Success())
	assert.False(t, zero.Failure(errBoom))
	assert.False(t, zero.Done(nil))
	zero.Ignore()
	assert.Equal(t, 1, b.State().Counts.ConsecutiveFailures)
}

// Move hands a permit's right to another Permit: the moved-from one is
// finished, the moved one still holds the call (a probe its slot) and
// finishes it once.
func TestBreaker_CB5_MoveKeepsTheRight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, p := leasedProbe(t)
		held := p.Move()
		assert.False(t, p.Probe(), "the moved-from permit is finished")
		assert.False(t, p.Success(), "finishing it is a no-op")
		assert.True(t, held.Probe())
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom, ProbesInFlight: 1}, b.State(), "the probe's slot is still held")
		openErr(t, b) // the only slot is taken
		assert.True(t, held.Success())
		assert.False(t, held.Success(), "finished once")
		assert.Equal(t, circuitbreaker.Closed, b.State().State)

		var zero circuitbreaker.Permit
		moved := zero.Move()
		assert.False(t, moved.Failure(errBoom), "moving a finished permit gives a finished one")
	})
}

func TestBreaker_CB5_StaleOutcomesDiscarded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 1},
			CoolDown: 10 * time.Second,
		})
		slowA, err := b.TryAcquire() // admitted in Closed
		require.NoError(t, err)
		slowB, err := b.TryAcquire()
		require.NoError(t, err)
		fail(t, b, 1, errBoom)

		// A late failure while Open does not re-arm the cool-down.
		time.Sleep(4 * time.Second)
		assert.False(t, slowA.Failure(errNotFound))
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: 6 * time.Second, Cause: errBoom}, b.State())

		// A slow success from Closed returning during HalfOpen changes nothing.
		time.Sleep(6 * time.Second)
		probe, err := b.TryAcquire()
		require.NoError(t, err)
		assert.False(t, slowB.Success())
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom, ProbesInFlight: 1}, b.State())
		assert.True(t, probe.Success())
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
	})
}

func TestBreaker_CB5_IgnoredProbeFreesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second})
		fail(t, b, 1, errBoom)
		time.Sleep(time.Second)
		p1, err := b.TryAcquire()
		require.NoError(t, err)
		openErr(t, b) // the only slot is taken
		p1.Ignore()
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom}, b.State(), "no verdict")
		p2, err := b.TryAcquire()
		require.NoError(t, err)
		assert.True(t, p2.Done(nil))
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
	})
}

// leasedProbe returns a HalfOpen breaker with a probe lease of 5s and the
// permit of its only probe, just admitted.
func leasedProbe(t *testing.T) (*circuitbreaker.Breaker, *circuitbreaker.Permit) {
	b := newBreaker(t, circuitbreaker.Config{
		Policy:     circuitbreaker.Consecutive{Failures: 1},
		CoolDown:   time.Second,
		ProbeLease: 5 * time.Second,
	})
	fail(t, b, 1, errBoom)
	time.Sleep(time.Second)
	p, err := b.TryAcquire()
	require.NoError(t, err)
	return b, &p
}

func TestBreaker_CB6_ProbeLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, lost := leasedProbe(t) // never finished in time

		time.Sleep(5*time.Second - time.Nanosecond)
		openErr(t, b)
		assert.Equal(t, 1, b.State().ProbesInFlight)
		time.Sleep(time.Nanosecond)
		assert.Equal(t, 0, b.State().ProbesInFlight, "the lease has expired")
		next, err := b.TryAcquire()
		require.NoError(t, err, "the slot is reclaimed")

		assert.False(t, lost.Success(), "an expired probe's outcome is discarded")
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		assert.True(t, next.Success())
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
	})
}

func TestBreaker_CB6_ExpiredProbeDiscardedBeforeReclaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, late := leasedProbe(t)
		time.Sleep(5 * time.Second)
		// No acquire has reclaimed the slot, yet the lease is over.
		assert.False(t, late.Failure(errNotFound))
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom}, b.State())
	})
}

func TestBreaker_CB9_Reset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Second})
		rec := record(b)
		fail(t, b, 1, errBoom)
		b.Reset()
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, b.State(), "history cleared")
		assert.Empty(t, rec.edges(), "Closed to Closed is no transition")

		fail(t, b, 2, errBoom)
		time.Sleep(time.Second)
		probe, err := b.TryAcquire()
		require.NoError(t, err)
		b.Reset()
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		assert.False(t, probe.Failure(errBoom), "a probe from before the reset cannot re-open")
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, b.State())
		assert.Equal(t, []string{"closed>open", "open>half-open", "half-open>closed"}, rec.edges())

		// A permit from Closed before a reset is stale too.
		p, err := b.TryAcquire()
		require.NoError(t, err)
		b.Reset()
		assert.False(t, p.Failure(errBoom))
		assert.Equal(t, 0, b.State().Counts.ConsecutiveFailures)
	})
}

func TestBreaker_CB11_Snapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 3}, CoolDown: time.Second, MaxProbes: 2})
		fail(t, b, 2, errBoom)
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: 2},
		}, b.State())
		assert.Equal(t, circuitbreaker.Closed, b.State().State, "reading does not change the state")
		fail(t, b, 1, errNotFound)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Second, Cause: errNotFound}, b.State())
		time.Sleep(time.Second)
		p1, err := b.TryAcquire()
		require.NoError(t, err)
		p2, err := b.TryAcquire()
		require.NoError(t, err)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errNotFound, ProbesInFlight: 2}, b.State())
		p1.Success()
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		p2.Ignore()
	})
}

func TestBreaker_CB13_ZeroImmediateAndForeverCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		z := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 0})
		fail(t, z, 1, errBoom)
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.Open, RetryAfter: circuitbreaker.DefaultCoolDown, Cause: errBoom,
		}, z.State(), "a zero CoolDown is the default cool-down, not none")
		assert.Equal(t, 30*time.Second, circuitbreaker.DefaultCoolDown)

		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: circuitbreaker.Immediate})
		fail(t, b, 1, errBoom)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom}, b.State(), "ready for a probe at once")
		succeed(t, b, 1)
		assert.Equal(t, circuitbreaker.Closed, b.State().State)

		f := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: rampart.Forever})
		fail(t, f, 1, errBoom)
		time.Sleep(1000 * 24 * time.Hour)
		oe := openErr(t, f)
		assert.Equal(t, rampart.Forever, oe.RetryAfter())
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: rampart.Forever, Cause: errBoom}, f.State())
		f.Reset()
		succeed(t, f, 1)
	})
}

func TestBreaker_CB13_Defaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{})
		fail(t, b, 4, errBoom)
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		fail(t, b, 1, errBoom)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: 30 * time.Second, Cause: errBoom}, b.State())
		time.Sleep(30 * time.Second)
		p, err := b.TryAcquire()
		require.NoError(t, err)
		openErr(t, b) // MaxProbes defaults to 1
		p.Success()
		assert.Equal(t, circuitbreaker.Closed, b.State().State, "one probe success closes")
	})
}

func TestBreaker_CB13_Validation(t *testing.T) {
	tests := []struct {
		name string
		cfg  circuitbreaker.Config
		want string
	}{
		{name: "negative cool-down", cfg: circuitbreaker.Config{CoolDown: -2},
			want: "circuitbreaker: CoolDown must be >= 0 (or Immediate), got -2ns"},
		{name: "negative probes", cfg: circuitbreaker.Config{MaxProbes: -1},
			want: "circuitbreaker: MaxProbes must be in [0, 1024], got -1"},
		{name: "absurd probes", cfg: circuitbreaker.Config{MaxProbes: 1 << 20},
			want: "circuitbreaker: MaxProbes must be in [0, 1024], got 1048576"},
		{name: "negative lease", cfg: circuitbreaker.Config{ProbeLease: -time.Second},
			want: "circuitbreaker: ProbeLease must be >= 0, got -1s"},
		{name: "negative max cool-down", cfg: circuitbreaker.Config{MaxCoolDown: -time.Second},
			want: "circuitbreaker: MaxCoolDown must be >= 0, got -1s"},
		{name: "max below cool-down", cfg: circuitbreaker.Config{CoolDown: time.Minute, MaxCoolDown: time.Second},
			want: "circuitbreaker: MaxCoolDown must be >= CoolDown (1m0s), got 1s"},
		{name: "growth from immediate", cfg: circuitbreaker.Config{CoolDown: circuitbreaker.Immediate, MaxCoolDown: time.Second},
			want: "circuitbreaker: MaxCoolDown needs a positive, finite CoolDown, got Immediate"},
		{name: "growth from forever", cfg: circuitbreaker.Config{CoolDown: rampart.Forever, MaxCoolDown: rampart.Forever},
			want: "circuitbreaker: MaxCoolDown needs a positive, finite CoolDown, got rampart.Forever"},
		{name: "multiplier without max", cfg: circuitbreaker.Config{CoolDownMultiplier: 2},
			want: "circuitbreaker: CoolDownMultiplier needs MaxCoolDown, got multiplier 2 without it"},
		{name: "multiplier below one", cfg: circuitbreaker.Config{MaxCoolDown: time.Hour, CoolDownMultiplier: 0.5},
			want: "circuitbreaker: CoolDownMultiplier must be finite and >= 1, got 0.5"},
		{name: "negative failures", cfg: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: -1}},
			want: "circuitbreaker: Consecutive.Failures must be >= 0, got -1"},
		{name: "absurd successes", cfg: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Successes: 1 << 30}},
			want: "circuitbreaker: Consecutive.Successes must be <= 1000000, got 1073741824"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := circuitbreaker.New(tt.cfg)
			require.EqualError(t, err, tt.want)
			assert.Nil(t, b)
		})
	}
}

func TestBreaker_CB14_GrowingCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:      circuitbreaker.Consecutive{Failures: 1},
			CoolDown:    time.Second,
			MaxCoolDown: 5 * time.Second,
		})
		fail(t, b, 1, errBoom)
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, cooldowns(t, b, 5))

		time.Sleep(5 * time.Second)
		succeed(t, b, 1) // closes: the schedule starts again
		fail(t, b, 1, errBoom)
		assert.Equal(t, time.Second, b.State().RetryAfter)
	})
}

func TestBreaker_CB14_Multiplier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:             circuitbreaker.Consecutive{Failures: 1},
			CoolDown:           time.Second,
			MaxCoolDown:        rampart.Forever,
			CoolDownMultiplier: 1.5,
		})
		fail(t, b, 1, errBoom)
		assert.Equal(t, []time.Duration{time.Second, 1500 * time.Millisecond, 2250 * time.Millisecond}, cooldowns(t, b, 3))
	})
}

func TestBreaker_CB13_ImmediateCooldownBurst(t *testing.T) {
	// With no cool-down a failing probe re-opens and the next call is a
	// probe again: the breaker never refuses for cool-down.
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: circuitbreaker.Immediate})
	for range 3 {
		fail(t, b, 1, errors.New("down"))
	}
	assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
}

// cooldowns returns n consecutive cool-downs of an Open breaker whose
// policy trips on one failure: it waits out each and fails the probe.
func cooldowns(t *testing.T, b *circuitbreaker.Breaker, n int) []time.Duration {
	var got []time.Duration
	for range n {
		s := b.State()
		got = append(got, s.RetryAfter)
		time.Sleep(s.RetryAfter)
		fail(t, b, 1, errBoom) // the probe fails: a consecutive re-open
	}
	return got
}

// brokenPolicy returns the tracker it holds, possibly nil.
type brokenPolicy struct{ t circuitbreaker.Tracker }

func (p brokenPolicy) NewTracker() (circuitbreaker.Tracker, error) { return p.t, nil }

func TestBreaker_CB13_BrokenPolicy(t *testing.T) {
	_, err := circuitbreaker.New(circuitbreaker.Config{Policy: brokenPolicy{}})
	require.EqualError(t, err, "circuitbreaker: Policy circuitbreaker_test.brokenPolicy returned a nil Tracker")
}

func TestStrings(t *testing.T) {
	assert.Equal(t, "closed open half-open forced-open forced-closed State(9)", fmt.Sprint(
		circuitbreaker.Closed, circuitbreaker.Open, circuitbreaker.HalfOpen,
		circuitbreaker.ForcedOpen, circuitbreaker.ForcedClosed, circuitbreaker.State(9)))
	assert.Equal(t, "pending close reopen Verdict(7)", fmt.Sprint(
		circuitbreaker.VerdictPending, circuitbreaker.VerdictClose, circuitbreaker.VerdictReopen, circuitbreaker.Verdict(7)))
	assert.Equal(t, "circuitbreaker: open (half-open, every probe slot taken)", (&circuitbreaker.OpenError{}).Error())
	assert.Zero(t, (&circuitbreaker.OpenError{}).RetryAfter())
}

// In a synctest bubble the end of every cool-down is exact: the timer that
// marks it near fires strictly before it, so a caller that wakes exactly
// at the end is the probe and one a nanosecond before is refused, every
// time, whatever order the bubble's goroutines run in.
func TestBreaker_CB21_CooldownEndExactInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 3 * time.Millisecond})
		for i := range 200 {
			fail(t, b, 1, errBoom)
			time.Sleep(3*time.Millisecond - time.Nanosecond)
			require.Equal(t, time.Nanosecond, openErr(t, b).RetryAfter(), "round %d", i)
			time.Sleep(time.Nanosecond)
			p, err := b.TryAcquire()
			require.NoError(t, err, "round %d", i)
			require.True(t, p.Success())
		}
	})
}

func TestNew_CB13_NilPointerPoliciesAreErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy circuitbreaker.Policy
		want   string
	}{
		{name: "Config.Policy", policy: (*circuitbreaker.FailureRate)(nil),
			want: "circuitbreaker: Config.Policy is a nil *circuitbreaker.FailureRate"},
		{name: "SuccessRate.Trip", policy: circuitbreaker.SuccessRate{Trip: (*circuitbreaker.Consecutive)(nil)},
			want: "circuitbreaker: SuccessRate.Trip is a nil *circuitbreaker.Consecutive (SuccessRate.Trip)"},
		{name: "Any", policy: circuitbreaker.Any(circuitbreaker.Consecutive{}, (*circuitbreaker.SlowCalls)(nil)),
			want: "circuitbreaker: Any policy 1 is a nil *circuitbreaker.SlowCalls (Any policy 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := circuitbreaker.New(circuitbreaker.Config{Policy: tc.policy})
			assert.EqualError(t, err, tc.want)
		})
	}
}

// A supplied clock whose wall reading steps an hour forward and back moves
// neither the cool-down nor the time window: both are measured on its
// Monotonic readings.
func TestClock_CB20_WallJumpMovesNoCooldownNorWindow(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{
		Clock:    clk,
		CoolDown: 10 * time.Second,
		Policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: 3},
		},
	})
	fail(t, b, 1, errBoom)
	succeed(t, b, 1)
	for _, jump := range []time.Duration{time.Hour, -time.Hour, -time.Hour} {
		clk.Jump(jump)
		assert.Equal(t, circuitbreaker.Counts{Calls: 2, Failures: 1}, b.State().Counts, "after a wall step of %v", jump)
	}
	clk.Advance(9 * time.Second)
	fail(t, b, 1, errBoom) // 2 of 3 failed: trips
	clk.Jump(time.Hour)
	assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: 10 * time.Second, Cause: errBoom}, b.State())
	clk.Jump(-2 * time.Hour)
	assert.Equal(t, 10*time.Second, b.State().RetryAfter)
	clk.Advance(10*time.Second - time.Nanosecond)
	assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Nanosecond, Cause: errBoom}, b.State())
	clk.Advance(time.Nanosecond)
	assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
}

// A supplied clock drives the whole cycle: the cool-down, the probe lease,
// slow-call latencies, the time of every transition and the group's idle
// time are all its readings.
func TestClock_CB20_DrivesTheCycle(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{
		Clock:      clk,
		CoolDown:   30 * time.Second,
		ProbeLease: time.Minute,
		Policy:     circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 2}},
	})
	rec := record(b)
	call := func(took time.Duration) {
		t.Helper()
		p, err := b.TryAcquire()
		require.NoError(t, err)
		clk.Advance(took)
		p.Success()
	}
	start := clk.Now()
	call(time.Second)
	call(time.Second - time.Nanosecond)
	assert.Equal(t, circuitbreaker.Counts{Calls: 2, SlowCalls: 1}, b.State().Counts, "latency measured on the clock")
	call(time.Second)
	call(time.Second) // the window holds two slow calls: trips
	tripped := start.Add(4*time.Second - time.Nanosecond)
	assert.Equal(t, circuitbreaker.Snapshot{
		State: circuitbreaker.Open, RetryAfter: 30 * time.Second, Cause: circuitbreaker.ErrSlowCalls,
	}, b.State())

	clk.Jump(time.Hour) // timestamps follow the wall reading, durations do not
	clk.Advance(30*time.Second - time.Nanosecond)
	assert.Equal(t, time.Nanosecond, b.State().RetryAfter)
	openErr(t, b)
	clk.Advance(time.Nanosecond)
	lost, err := b.TryAcquire() // the first probe, never finished
	require.NoError(t, err)
	halfOpen := tripped.Add(time.Hour + 30*time.Second)
	assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, ProbesInFlight: 1, Cause: circuitbreaker.ErrSlowCalls}, b.State())
	clk.Advance(time.Minute - time.Nanosecond)
	assert.Equal(t, time.Duration(0), openErr(t, b).RetryAfter(), "the lease still holds the slot")
	clk.Advance(time.Nanosecond)
	call(0) // the lease ended: this probe takes the slot and closes
	closed := halfOpen.Add(time.Minute)
	assert.False(t, lost.Success(), "a probe whose lease ended does not count")

	want := []circuitbreaker.Transition{
		{From: circuitbreaker.Closed, To: circuitbreaker.Open, Time: tripped, Cause: circuitbreaker.ErrSlowCalls, RetryAfter: 30 * time.Second,
			Counts: circuitbreaker.Counts{Calls: 2, SlowCalls: 2}}, // the counts it tripped on
		{From: circuitbreaker.Open, To: circuitbreaker.HalfOpen, Time: halfOpen},
		{From: circuitbreaker.HalfOpen, To: circuitbreaker.Closed, Time: closed},
	}
	assert.Equal(t, want, rec.all())
}

// With a supplied clock, a call through a Closed breaker whose policy
// needs no time reads the clock not once, and allocates nothing.
func TestClock_CB20_ClosedSuccessReadsNoClock(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{Clock: clk})
	before := reads(clk)
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := b.TryAcquire()
		p.Success()
	})
	assert.Zero(t, allocs)
	assert.Equal(t, before, reads(clk))
}

// An Open breaker refuses without reading the clock until its timer marks
// the end of the cool-down as near (an eighth of it, at most a second,
// before the end); from then on each refusal reads the clock, and the
// first caller after the end is the probe, exactly on time.
func TestClock_CB21_OpenRejectionReadsNoClock(t *testing.T) {
	clk := newFakeClock()
	b := newBreaker(t, circuitbreaker.Config{Clock: clk, Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 16 * time.Second})
	fail(t, b, 1, errBoom)
	first := openErr(t, b)
	before := reads(clk)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := b.TryAcquire(); err != first {
			t.Fatalf("rejection %v, want the period's prebuilt one", err)
		}
	})
	assert.Zero(t, allocs)
	assert.Equal(t, before, reads(clk), "no clock read per rejection")

	clk.Advance(15*time.Second - time.Nanosecond)
	openErr(t, b)
	assert.Equal(t, before, reads(clk), "the timer has not fired yet")
	assert.Equal(t, time.Second+time.Nanosecond, first.RetryAfter(), "asking reads the clock")
	clk.Advance(time.Nanosecond) // the timer fires, a second before the end
	before = reads(clk)
	assert.Same(t, first, openErr(t, b))
	assert.Equal(t, before+1, reads(clk), "near the end, a rejection reads the clock once")
	clk.Advance(time.Second - time.Nanosecond)
	assert.Equal(t, time.Nanosecond, openErr(t, b).RetryAfter())
	clk.Advance(time.Nanosecond)
	p, err := b.TryAcquire()
	require.NoError(t, err, "the first call after the cool-down is the probe")
	assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
	assert.Zero(t, first.RetryAfter(), "the cool-down is over")
	p.Success()
	assert.Equal(t, circuitbreaker.Closed, b.State().State)
}

// The timer armed when the breaker opens never outlives the Open period:
// a Reset, every manual change and the end of the cool-down leave none
// pending, and a cool-down that ends at once or never arms none.
func TestClock_CB21_NoTimerLeftBehind(t *testing.T) {
	clk := newFakeClock()
	sw := &circuitbreaker.Switch{}
	b := newBreaker(t, circuitbreaker.Config{Clock: clk, Switch: sw, Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute})
	trip := func() {
		t.Helper()
		fail(t, b, 1, errBoom)
		require.Equal(t, circuitbreaker.Open, b.State().State)
		require.Equal(t, 1, clk.Pending(), "armed when the breaker opens")
	}
	trip()
	b.Reset()
	assert.Zero(t, clk.Pending(), "after Reset")
	trip()
	sw.ForceOpen(errBoom)
	assert.Zero(t, clk.Pending(), "after ForceOpen")
	sw.Release()
	trip()
	sw.ForceClosed()
	assert.Zero(t, clk.Pending(), "after ForceClosed")
	sw.Release()
	trip()
	clk.Advance(time.Minute)
	assert.Zero(t, clk.Pending(), "fired")
	fail(t, b, 1, errBoom) // the probe fails: a fresh Open period
	assert.Equal(t, 1, clk.Pending(), "re-armed on re-open")
	b.Reset()
	assert.Zero(t, clk.Pending())

	for _, cooldown := range []time.Duration{circuitbreaker.Immediate, rampart.Forever} {
		b := newBreaker(t, circuitbreaker.Config{Clock: clk, Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: cooldown})
		fail(t, b, 1, errBoom)
		assert.Zero(t, clk.Pending(), "cool-down %v", cooldown)
	}
}

func TestBreaker_CB19_NameInTransitionsErrorsAndSnapshots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Name: "payments", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
		rec := record(b)
		fail(t, b, 1, errBoom)
		oe := openErr(t, b)
		assert.Equal(t, "payments", oe.Name)
		assert.Equal(t, `circuitbreaker "payments": open (retry after 1h0m0s): tripped by: boom`, oe.Error())
		assert.Equal(t, circuitbreaker.Snapshot{Name: "payments", State: circuitbreaker.Open, RetryAfter: time.Hour, Cause: errBoom}, b.State())
		trs := rec.all()
		require.Len(t, trs, 1)
		assert.Equal(t, "payments", trs[0].Name)
	})
}

// TestHammer drives one breaker from many goroutines with random outcomes,
// resets and switch flips, and checks the invariants on every step: probes
// in flight never exceed MaxProbes, a refused call never runs, every
// transition is legal, and the listener sees transitions in order and one
// at a time.
func TestHammer(t *testing.T) {
	defer goleak.VerifyNone(t)
	const (
		goroutines = 16
		steps      = 2000
		maxProbes  = 3
	)
	sw := &circuitbreaker.Switch{}
	b := newBreaker(t, circuitbreaker.Config{
		Policy:    circuitbreaker.Consecutive{Failures: 3, Successes: 2},
		CoolDown:  circuitbreaker.Immediate,
		MaxProbes: maxProbes,
		Switch:    sw,
	})

	var (
		mu        sync.Mutex
		last      = circuitbreaker.Closed
		bad       []string
		delivered atomic.Int64
		active    atomic.Int32
	)
	b.Subscribe(func(tr circuitbreaker.Transition) {
		if active.Add(1) != 1 {
			mu.Lock()
			bad = append(bad, "listener called concurrently")
			mu.Unlock()
		}
		mu.Lock()
		if tr.From != last {
			bad = append(bad, "out of order: "+last.String()+" then "+tr.From.String()+">"+tr.To.String())
		}
		if !legal[[2]circuitbreaker.State{tr.From, tr.To}] {
			bad = append(bad, "illegal: "+tr.From.String()+">"+tr.To.String())
		}
		last = tr.To
		mu.Unlock()
		delivered.Add(1)
		active.Add(-1)
	})

	// Each layer call has its own id; the inner service marks it run.
	type req struct{ id, kind int }
	var (
		ran      = make([]atomic.Bool, goroutines*steps)
		rejected atomic.Int64
		inner    = rampart.ServiceFunc[req, int](func(ctx context.Context, r req) (int, error) {
			ran[r.id].Store(true)
			switch r.kind {
			case 0:
				return 0, errBoom
			case 1:
				return 0, context.Canceled
			}
			return r.id, nil
		})
		svc = rampart.NewBuilder[req, int]().Layer(circuitbreaker.NewLayer[req, int](b, nil)).Service(inner)
		wg  sync.WaitGroup
	)
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range steps {
				id := g*steps + i
				switch n := r.IntN(100); {
				case n < 60: // through the layer
					_, err := svc.Call(context.Background(), req{id: id, kind: r.IntN(4)})
					if errors.Is(err, circuitbreaker.ErrOpen) {
						rejected.Add(1)
						assert.False(t, ran[id].Load(), "call %d rejected and run", id)
					} else {
						assert.True(t, ran[id].Load(), "call %d admitted but not run", id)
					}
				case n < 90: // by hand
					p, err := b.TryAcquire()
					if err != nil {
						continue
					}
					if s := b.State(); s.ProbesInFlight > maxProbes {
						t.Errorf("%d probes in flight", s.ProbesInFlight)
					}
					switch r.IntN(4) {
					case 0:
						p.Success()
					case 1:
						p.Failure(errBoom)
					case 2:
						p.Ignore()
					default:
						p.Done(nil)
					}
					assert.False(t, p.Success(), "finished twice")
				case n < 94:
					b.Reset()
				case n < 96:
					sw.ForceOpen(errMaintenance)
				case n < 98:
					sw.ForceClosed()
				default:
					sw.Release()
				}
				if s := b.State(); s.ProbesInFlight > maxProbes {
					t.Errorf("%d probes in flight", s.ProbesInFlight)
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, bad)
	assert.Positive(t, delivered.Load())
	assert.Positive(t, rejected.Load())
}

// model is a deliberately plain reference implementation of the contract
// for the Consecutive policy, kept in one goroutine with its own clock.
type model struct {
	failures, successes, maxProbes int
	cooldown0, maxCooldown, lease  time.Duration

	now       time.Duration
	state     circuitbreaker.State
	epoch     int
	run       int
	cooldown  time.Duration
	until     time.Duration
	probes    map[int]time.Duration // permit id -> lease expiry
	succeeded int
	cause     error
	swState   circuitbreaker.State // the switch: Closed means released
	edges     []string
}

type modelPermit struct {
	id, epoch int
	state     circuitbreaker.State
	done      bool
}

func (m *model) enter(to circuitbreaker.State, cause error) {
	if m.state != to || to == circuitbreaker.ForcedOpen {
		m.edges = append(m.edges, m.state.String()+">"+to.String())
	}
	m.state = to
	m.epoch++
	switch to {
	case circuitbreaker.Closed:
		m.run, m.cooldown = 0, m.cooldown0
	case circuitbreaker.HalfOpen:
		m.probes, m.succeeded, m.run = map[int]time.Duration{}, 0, 0
	case circuitbreaker.Open, circuitbreaker.ForcedOpen:
		m.cause = cause
		m.until = m.now + m.cooldown
	}
}

// acquire returns a permit, or the RetryAfter of the refusal.
func (m *model) acquire(id int) (*modelPermit, time.Duration) {
	switch m.state {
	case circuitbreaker.Closed, circuitbreaker.ForcedClosed:
		return &modelPermit{id: id, epoch: m.epoch, state: m.state}, 0
	case circuitbreaker.ForcedOpen:
		return nil, rampart.Forever
	case circuitbreaker.Open:
		if m.now < m.until {
			return nil, m.until - m.now
		}
		m.enter(circuitbreaker.HalfOpen, nil)
	}
	n := 0
	for _, exp := range m.probes {
		if exp > m.now {
			n++
		}
	}
	if n >= m.maxProbes {
		return nil, 0
	}
	m.probes[id] = m.now + m.lease
	return &modelPermit{id: id, epoch: m.epoch, state: circuitbreaker.HalfOpen}, 0
}

func (m *model) finish(p *modelPermit, o rampart.Outcome, err error) bool {
	if p.done {
		return false
	}
	p.done = true
	if p.epoch != m.epoch {
		return false
	}
	switch p.state {
	case circuitbreaker.Closed:
		switch o {
		case rampart.Success:
			m.run = 0
		case rampart.Failure:
			m.run++
			if m.run >= m.failures {
				m.cooldown = m.cooldown0
				m.enter(circuitbreaker.Open, err)
			}
		default:
			return false
		}
		return true
	case circuitbreaker.HalfOpen:
		exp, ok := m.probes[p.id]
		delete(m.probes, p.id)
		if !ok || exp <= m.now || o == rampart.Ignored {
			return false
		}
		if o == rampart.Failure {
			if m.maxCooldown != 0 {
				m.cooldown = min(2*m.cooldown, m.maxCooldown)
			}
			m.enter(circuitbreaker.Open, err)
			return true
		}
		m.succeeded++
		if m.succeeded >= m.successes {
			m.enter(circuitbreaker.Closed, nil)
		}
		return true
	}
	return false
}

func (m *model) snapshot() circuitbreaker.Snapshot {
	s := circuitbreaker.Snapshot{State: m.state}
	switch m.state {
	case circuitbreaker.Closed: // ForcedClosed has no counters (CB11)
		s.Counts.ConsecutiveFailures = m.run
	case circuitbreaker.Open:
		s.Cause = m.cause
		if m.now < m.until {
			s.RetryAfter = m.until - m.now
		} else {
			s.State = circuitbreaker.HalfOpen
		}
	case circuitbreaker.HalfOpen:
		s.Cause = m.cause
		for _, exp := range m.probes {
			if exp > m.now {
				s.ProbesInFlight++
			}
		}
		s.ProbesSucceeded = m.succeeded
	case circuitbreaker.ForcedOpen:
		s.Cause, s.RetryAfter = m.cause, rampart.Forever
	}
	return s
}

func (m *model) reset() {
	if m.state == circuitbreaker.ForcedOpen || m.state == circuitbreaker.ForcedClosed {
		m.run, m.cooldown = 0, m.cooldown0
		return
	}
	m.enter(circuitbreaker.Closed, nil)
}

func (m *model) flip(to circuitbreaker.State, reason error) {
	if m.swState == to && to != circuitbreaker.ForcedOpen {
		return
	}
	m.swState = to
	if to == circuitbreaker.Closed && m.state != circuitbreaker.ForcedOpen && m.state != circuitbreaker.ForcedClosed {
		return
	}
	m.enter(to, reason)
}

var fuzzErrs = []error{errors.New("e0"), errors.New("e1"), errors.New("e2")}

// FuzzBreaker drives a breaker with the Consecutive policy through an
// arbitrary sequence of acquires, outcomes, time steps, resets and switch
// flips, and checks every result, every snapshot and the transitions the
// listener saw against the model.
func FuzzBreaker(f *testing.F) {
	f.Add([]byte{2, 1, 1, 0, 0, 0, 0x12, 0x22, 0, 0x34, 0, 0x11, 0x07})
	f.Add([]byte{0, 0, 2, 3, 0, 0, 0, 0x22, 0, 0x40, 0, 0, 0, 0x10, 0x21, 0x32, 0x05, 0x06})
	f.Add([]byte{1, 2, 0, 1, 0, 0x26, 0, 0x08, 0, 0x09, 0, 0x13, 0x0a, 0, 0x10})
	fuzzBubble(f, 4, runModel)
}

func runModel(t *testing.T, data []byte) {
	m := &model{
		failures:  int(data[0]%4) + 1,
		successes: int(data[1]%3) + 1,
		maxProbes: int(data[2]%3) + 1,
		cooldown0: time.Duration(data[3]%4) * 30 * time.Millisecond,
		lease:     time.Duration(data[3]/4%4+1) * 50 * time.Millisecond,
	}
	if data[3]&0x80 != 0 && m.cooldown0 > 0 {
		m.maxCooldown = 4 * m.cooldown0
	}
	m.cooldown = m.cooldown0
	reset := m.cooldown0
	if reset == 0 {
		reset = circuitbreaker.Immediate
	}
	sw := &circuitbreaker.Switch{}
	b, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:      circuitbreaker.Consecutive{Failures: m.failures, Successes: m.successes},
		CoolDown:    reset,
		MaxCoolDown: m.maxCooldown,
		MaxProbes:   m.maxProbes,
		ProbeLease:  m.lease,
		Switch:      sw,
	})
	require.NoError(t, err)
	rec := record(b)

	var (
		permits []*circuitbreaker.Permit
		mperms  []*modelPermit
	)
	for i, op := range data[4:] {
		arg := int(op >> 3)
		switch op & 7 {
		case 0, 1: // acquire
			p, err := b.TryAcquire()
			mp, retry := m.acquire(len(permits))
			if mp == nil {
				var oe *circuitbreaker.OpenError
				require.ErrorAs(t, err, &oe, "op %d: model rejects", i)
				require.Equal(t, retry, oe.RetryAfter(), "op %d", i)
				continue
			}
			require.NoError(t, err, "op %d: model admits", i)
			permits = append(permits, &p)
			mperms = append(mperms, mp)
		case 2, 3, 4: // finish a permit: success, failure, ignore
			if len(permits) == 0 {
				continue
			}
			k := arg % len(permits)
			o := rampart.Outcome(op&7 - 2)
			e := fuzzErrs[arg%len(fuzzErrs)]
			var got bool
			switch o {
			case rampart.Success:
				got = permits[k].Success()
			case rampart.Failure:
				got = permits[k].Failure(e)
			default:
				permits[k].Ignore()
			}
			want := m.finish(mperms[k], o, e)
			if o != rampart.Ignored {
				require.Equal(t, want, got, "op %d: outcome %v of permit %d counted", i, o, k)
			}
		case 5: // advance time
			d := time.Duration(arg+1) * 5 * time.Millisecond
			time.Sleep(d)
			m.now += d
		case 6: // reset
			b.Reset()
			m.reset()
		case 7: // the switch
			switch arg % 4 {
			case 0:
				sw.ForceOpen(fuzzErrs[arg%3])
				m.flip(circuitbreaker.ForcedOpen, fuzzErrs[arg%3])
			case 1:
				sw.ForceClosed()
				m.flip(circuitbreaker.ForcedClosed, nil)
			default:
				sw.Release()
				m.flip(circuitbreaker.Closed, nil)
			}
		}
		require.Equal(t, m.snapshot(), b.State(), "op %d (%#x)", i, op)
	}
	require.Equal(t, m.edges, nonNil(rec.edges()), fmt.Sprintf("transitions for %x", data))
}

func nonNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// fuzzBubble fuzzes run with inputs of at least minLen bytes, cut to 512
// (longer inputs add time, not coverage), each in its own synctest bubble.
func fuzzBubble(f *testing.F, minLen int, run func(*testing.T, []byte)) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < minLen {
			return
		}
		data = data[:min(len(data), 512)]
		synctest.Test(t, func(t *testing.T) { run(t, data) })
	})
}

// binder is an observe.Binder whose bound observers all record into one
// Recorder, and which notes each Bind.
type binder struct {
	unbound, bound observetest.Recorder
	binds          []string
}

func (b *binder) Observe(ctx context.Context, e observe.Event) { b.unbound.Observe(ctx, e) }

func (b *binder) Bind(source observe.Source, name string) observe.Observer {
	b.binds = append(b.binds, source.String()+" "+name)
	return &b.bound
}

func TestBreaker_EV13_NewBindsTheObserver(t *testing.T) {
	var obs binder
	b := newBreaker(t, circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1}, Observer: &obs})
	require.Equal(t, []string{"circuitbreaker db"}, obs.binds)
	errDown := errors.New("down")
	svc := wrap.Layer(rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
		if req == "down" {
			return "", errDown
		}
		return "ok", nil
	}), circuitbreaker.NewLayer, b, nil)
	_, _ = svc.Call(context.Background(), "ok")
	_, _ = svc.Call(context.Background(), "down")
	require.Equal(t, []observe.Event{
		{Source: observe.Breaker, Name: "db", Kind: observe.Success},
		{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "closed", To: "open", Err: errDown, Calls: 1, Failures: 1, Duration: circuitbreaker.DefaultCoolDown},
		{Source: observe.Breaker, Name: "db", Kind: observe.Failure, Err: errDown},
	}, obs.bound.Events())
	require.Empty(t, obs.unbound.Events())
}

// removed returns the names of the Removed events in rec, checking that
// they set no other field.
func removed(t *testing.T, rec *observetest.Recorder) []string {
	t.Helper()
	names := []string{}
	for _, e := range rec.Events() {
		if e.Kind == observe.Removed {
			require.Equal(t, observe.Event{Source: observe.Breaker, Name: e.Name, Kind: observe.Removed}, e)
			names = append(names, e.Name)
		}
	}
	return names
}

func TestBreaker_EV9_TransitionsReachTheObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		errDown := errors.New("down")
		b := newBreaker(t, circuitbreaker.Config{
			Name: "db", Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Second, Observer: &rec,
		})
		fail(t, b, 2, errDown)
		time.Sleep(time.Second)
		succeed(t, b, 1)

		ev := func(from, to string, cause error) observe.Event {
			return observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: from, To: to, Err: cause}
		}
		// The permits used by hand report their outcomes too, each after
		// the transition it caused.
		failed := observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Failure, Err: errDown}
		trip := ev("closed", "open", errDown)
		trip.Calls, trip.Failures = 2, 2 // the counts it tripped on
		trip.Duration = time.Second      // its cool-down
		require.Equal(t, []observe.Event{
			failed,
			trip,
			failed,
			ev("open", "half-open", nil),
			ev("half-open", "closed", nil),
			{Source: observe.Breaker, Name: "db", Kind: observe.Success},
		}, rec.Events())
	})
}

// TestBreaker_CB15_ZeroValueIsDefaultBreaker checks that a zero Breaker is
// usable through every method, whichever is called first, and behaves as
// New(Config{}): five consecutive failures trip it, it cools down for 30
// seconds, then one probe success closes it.
func TestBreaker_CB15_ZeroValueIsDefaultBreaker(t *testing.T) {
	closed := circuitbreaker.Snapshot{State: circuitbreaker.Closed}
	first := []struct {
		name string
		use  func(t *testing.T, b *circuitbreaker.Breaker)
	}{{
		name: "State",
		use:  func(t *testing.T, b *circuitbreaker.Breaker) { assert.Equal(t, closed, b.State()) },
	}, {
		name: "TryAcquire",
		use: func(t *testing.T, b *circuitbreaker.Breaker) {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			assert.True(t, p.Success())
		},
	}, {
		name: "TryAcquire then rampart.Failure",
		use: func(t *testing.T, b *circuitbreaker.Breaker) {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			assert.True(t, p.Failure(errBoom))
			assert.Equal(t, circuitbreaker.Snapshot{
				State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: 1},
			}, b.State())
			b.Reset()
		},
	}, {
		name: "Reset",
		use:  func(t *testing.T, b *circuitbreaker.Breaker) { b.Reset() },
	}, {
		name: "Subscribe",
		use: func(t *testing.T, b *circuitbreaker.Breaker) {
			unsubscribe := b.Subscribe(func(circuitbreaker.Transition) {})
			unsubscribe()
		},
	}, {
		name: "layer",
		use: func(t *testing.T, b *circuitbreaker.Breaker) {
			resp, err := guard(b, &backend{}).Call(t.Context(), "a")
			require.NoError(t, err)
			assert.Equal(t, "ok:a", resp)
		},
	}, {
		name: "classified layer",
		use: func(t *testing.T, b *circuitbreaker.Breaker) {
			svc := circuitbreaker.NewLayer[string, string](b, nil).Wrap(&backend{})
			resp, err := svc.Call(t.Context(), "a")
			require.NoError(t, err)
			assert.Equal(t, "ok:a", resp)
		},
	}}
	for _, tt := range first {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b circuitbreaker.Breaker
				tt.use(t, &b)
				assert.Equal(t, closed, b.State())

				rec := record(&b)
				fail(t, &b, 4, errBoom)
				assert.Equal(t, closed.State, b.State().State)
				fail(t, &b, 1, errBoom)
				assert.Equal(t, circuitbreaker.Snapshot{
					State: circuitbreaker.Open, RetryAfter: circuitbreaker.DefaultCoolDown, Cause: errBoom,
				}, b.State())
				assert.Equal(t, circuitbreaker.DefaultCoolDown, openErr(t, &b).RetryAfter())
				time.Sleep(circuitbreaker.DefaultCoolDown)
				p, err := b.TryAcquire()
				require.NoError(t, err)
				openErr(t, &b) // one probe at a time
				require.True(t, p.Success())
				assert.Equal(t, closed, b.State())
				assert.Equal(t, []string{"closed>open", "open>half-open", "half-open>closed"}, rec.edges())
			})
		})
	}
}

// TestBreaker_CB15_ZeroValueConcurrentFirstUse checks that goroutines that
// use a zero Breaker for the first time together set it up once: every
// failure lands in the same history.
func TestBreaker_CB15_ZeroValueConcurrentFirstUse(t *testing.T) {
	var b circuitbreaker.Breaker
	start := make(chan struct{})
	done := make(chan struct{})
	for range circuitbreaker.DefaultFailures - 1 {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			p, err := b.TryAcquire()
			if assert.NoError(t, err) {
				assert.True(t, p.Failure(errBoom))
			}
		}()
	}
	close(start)
	for range circuitbreaker.DefaultFailures - 1 {
		<-done
	}
	assert.Equal(t, circuitbreaker.Snapshot{
		State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: circuitbreaker.DefaultFailures - 1},
	}, b.State())
}

// TestBreaker_CB15_NilBreaker calls every exported method of a nil
// *Breaker: queries return the zero value, actions that cannot be done
// return an error naming the nil *Breaker, and nothing panics.
func TestBreaker_CB15_NilBreaker(t *testing.T) {
	var b *circuitbreaker.Breaker
	nilcheck.Calls(t, []nilcheck.Call{{
		Name: "State",
		Call: func() any { return b.State() },
		Want: circuitbreaker.Snapshot{},
	}, {
		Name: "TryAcquire",
		Call: func() any {
			p, err := b.TryAcquire()
			return []any{p.Success(), p.Probe(), err.Error(), errors.Is(err, rampart.ErrRefused)}
		},
		Want: []any{false, false, "circuitbreaker: TryAcquire of a nil *Breaker (build one with circuitbreaker.New)", false},
	}, {
		Name: "Reset",
		Call: func() any { b.Reset(); return b.State() },
		Want: circuitbreaker.Snapshot{},
	}, {
		Name: "Subscribe",
		Call: func() any {
			unsubscribe := b.Subscribe(func(circuitbreaker.Transition) { t.Error("called") })
			unsubscribe()
			return unsubscribe != nil
		},
		Want: true,
	}, {
		Name: "SubscribeFailures",
		Call: func() any {
			unsubscribe := b.SubscribeFailures(func(error) { t.Error("called") })
			unsubscribe()
			return unsubscribe != nil
		},
		Want: true,
	}, {
		Name: "Tune",
		Call: func() any { return b.Tune(circuitbreaker.Tuning{}).Error() },
		Want: "circuitbreaker: Tune of a nil *Breaker",
	}, {
		Name: "ApplyRemote",
		Call: func() any {
			changed, err := b.ApplyRemote(circuitbreaker.Open, time.Second, errBoom)
			return []any{changed, err.Error()}
		},
		Want: []any{false, "circuitbreaker: ApplyRemote of a nil *Breaker"},
	}})
}
