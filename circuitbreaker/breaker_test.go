package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
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
		assert.Equal(t, goroutines, runtime.NumGoroutine(), "the breaker starts no goroutine")

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
