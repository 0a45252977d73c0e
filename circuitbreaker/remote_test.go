package circuitbreaker_test

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

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
)

var errFleet = errors.New("open across the fleet")

func TestRemote_CB23_OpenIsATimeLimitedForcedOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{CoolDown: time.Minute})
		rec := record(b)
		changed, err := b.ApplyRemote(circuitbreaker.Open, 3*time.Second, errFleet)
		require.NoError(t, err)
		assert.True(t, changed)
		assert.Equal(t, circuitbreaker.Snapshot{
			State: circuitbreaker.Open, RetryAfter: 3 * time.Second, Cause: errFleet, Remote: true,
		}, b.State())
		oe := openErr(t, b)
		assert.Equal(t, 3*time.Second, oe.RetryAfter())
		assert.Equal(t, errFleet, oe.Cause)
		assert.Equal(t, []circuitbreaker.Transition{{
			From: circuitbreaker.Closed, To: circuitbreaker.Open, Time: time.Now(),
			Cause: errFleet, RetryAfter: 3 * time.Second, Remote: true,
		}}, rec.all())

		time.Sleep(3 * time.Second)
		p, err := b.TryAcquire()
		require.NoError(t, err, "the remote Open ended: the next acquire is a probe")
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		assert.True(t, b.State().Remote, "the HalfOpen that follows a remote Open is remote")
		p.Success()
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		assert.Equal(t, []string{"closed>open", "open>half-open", "half-open>closed"}, rec.edges())
		assert.False(t, rec.all()[2].Remote, "the probe's verdict is the breaker's own")
	})
}

func TestRemote_CB23_CloseClearsOnlyARemoteOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute})
		fail(t, b, 1, errBoom)
		changed, err := b.ApplyRemote(circuitbreaker.Closed, 0, nil)
		require.NoError(t, err)
		assert.False(t, changed, "a breaker tripped by its own calls stays Open")
		assert.Equal(t, circuitbreaker.Open, b.State().State)
		assert.False(t, b.State().Remote)

		changed, _ = b.ApplyRemote(circuitbreaker.Open, 0, errFleet)
		assert.False(t, changed, "remaining 0 ends only a remote Open")
		assert.Equal(t, time.Minute, b.State().RetryAfter)

		// A remote Open over its own replaces the end and makes it remote.
		changed, _ = b.ApplyRemote(circuitbreaker.Open, 10*time.Second, errFleet)
		assert.True(t, changed)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: 10 * time.Second, Cause: errFleet, Remote: true}, b.State())
		changed, _ = b.ApplyRemote(circuitbreaker.Closed, 0, nil)
		assert.True(t, changed)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, b.State())
		changed, _ = b.ApplyRemote(circuitbreaker.Closed, 0, nil)
		assert.False(t, changed, "already Closed")
	})
}

func TestRemote_CB23_ZeroRemainingEndsTheRemoteOpenNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{MaxProbes: 2})
		_, _ = b.ApplyRemote(circuitbreaker.Open, time.Hour, errFleet)
		changed, err := b.ApplyRemote(circuitbreaker.Open, 0, nil)
		require.NoError(t, err)
		assert.True(t, changed)
		p1, err := b.TryAcquire()
		require.NoError(t, err)
		p2, err := b.TryAcquire()
		require.NoError(t, err)
		_, err = b.TryAcquire()
		require.ErrorIs(t, err, circuitbreaker.ErrOpen, "MaxProbes probes, no more")
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		p1.Ignore()
		p2.Ignore()

		changed, _ = b.ApplyRemote(circuitbreaker.Closed, 0, nil)
		assert.True(t, changed, "a remote Close ends the HalfOpen that followed a remote Open")
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
	})
}

func TestRemote_CB23_OpenDiscardsPermitsOfTheStateItReplaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		p, err := b.TryAcquire()
		require.NoError(t, err)
		_, _ = b.ApplyRemote(circuitbreaker.Open, time.Second, errFleet)
		assert.False(t, p.Failure(errBoom), "a permit from the replaced Closed period does not count")
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Second, Cause: errFleet, Remote: true}, b.State())
	})
}

func TestRemote_CB23_SwitchOwnsForcedStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := &circuitbreaker.Switch{}
		b := newBreaker(t, circuitbreaker.Config{Switch: sw})
		sw.ForceClosed()
		changed, err := b.ApplyRemote(circuitbreaker.Open, time.Second, errFleet)
		require.NoError(t, err)
		assert.False(t, changed)
		assert.Equal(t, circuitbreaker.ForcedClosed, b.State().State)
		sw.ForceOpen(errMaintenance)
		changed, _ = b.ApplyRemote(circuitbreaker.Closed, 0, nil)
		assert.False(t, changed)
		assert.Equal(t, circuitbreaker.ForcedOpen, b.State().State)

		// A remote Open, then the switch forces and releases: Closed.
		sw.Release()
		_, _ = b.ApplyRemote(circuitbreaker.Open, time.Second, errFleet)
		sw.ForceOpen(errMaintenance)
		sw.Release()
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, b.State())
	})
}

func TestRemote_CB23_BadStateIsAnError(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{})
	for _, s := range []circuitbreaker.State{circuitbreaker.ForcedOpen, circuitbreaker.ForcedClosed, circuitbreaker.State(9)} {
		changed, err := b.ApplyRemote(s, time.Second, nil)
		require.EqualError(t, err, "circuitbreaker: ApplyRemote: state must be Open, HalfOpen or Closed, got "+s.String())
		assert.False(t, changed)
	}
	assert.Equal(t, circuitbreaker.Closed, b.State().State)
	var zero circuitbreaker.Breaker
	changed, err := zero.ApplyRemote(circuitbreaker.Open, time.Second, errFleet)
	require.NoError(t, err)
	assert.True(t, changed, "a zero Breaker sets itself up")
}

func TestRemote_CB23_HalfOpenGrantsTheProbeRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute})
		rec := record(b)
		changed, err := b.ApplyRemote(circuitbreaker.HalfOpen, time.Hour, errFleet)
		require.NoError(t, err)
		assert.True(t, changed, "a Closed breaker is granted the round")
		// A snapshot shows an Open whose cool-down has passed as HalfOpen.
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errFleet, Remote: true}, b.State())
		changed, _ = b.ApplyRemote(circuitbreaker.HalfOpen, 0, errFleet)
		assert.False(t, changed, "an ended remote Open is left as it is")
		p, err := b.TryAcquire()
		require.NoError(t, err, "the next acquire is a probe")
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		assert.True(t, b.State().Remote)
		changed, _ = b.ApplyRemote(circuitbreaker.HalfOpen, 0, errFleet)
		assert.False(t, changed, "a round in progress is left as it is")
		require.True(t, p.Success())
		assert.Equal(t, []string{"closed>open", "open>half-open", "half-open>closed"}, rec.edges())
		assert.Equal(t, time.Duration(0), rec.all()[0].RetryAfter)
		assert.True(t, rec.all()[0].Remote)
		assert.False(t, rec.all()[2].Remote, "the probe's verdict is the breaker's own")

		// The breaker's own Open, its cool-down not over: the grant ends it
		// and keeps its cause when given none.
		fail(t, b, 1, errBoom)
		changed, _ = b.ApplyRemote(circuitbreaker.HalfOpen, 0, nil)
		assert.True(t, changed)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: errBoom, Remote: true}, b.State())
		p, err = b.TryAcquire()
		require.NoError(t, err)
		p.Ignore()

		sw := &circuitbreaker.Switch{}
		forced := newBreaker(t, circuitbreaker.Config{Switch: sw})
		sw.ForceOpen(errMaintenance)
		changed, _ = forced.ApplyRemote(circuitbreaker.HalfOpen, 0, errFleet)
		assert.False(t, changed, "a forced state is never changed")
	})
}

func TestRemote_CB23_SubscribeFailuresSeesClosedFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var panics atomic.Int32
		b := newBreaker(t, circuitbreaker.Config{
			Policy: circuitbreaker.Consecutive{Failures: 3}, CoolDown: time.Second,
			ListenerPanic: func(any, []byte) { panics.Add(1) },
		})
		var got []error
		stop := b.SubscribeFailures(func(err error) {
			p, aerr := b.TryAcquire() // called without the breaker's lock
			if aerr == nil {
				p.Ignore()
			}
			got = append(got, err)
		})
		assert.NotPanics(t, func() { b.SubscribeFailures(nil)() })
		stopPanic := b.SubscribeFailures(func(error) { panic("listener") })
		succeed(t, b, 2)
		fail(t, b, 3, errBoom) // the third trips: counted too
		assert.Equal(t, []error{errBoom, errBoom, errBoom}, got)
		assert.Equal(t, int32(3), panics.Load(), "a panic goes to ListenerPanic")
		stopPanic()

		time.Sleep(time.Second)
		p, err := b.TryAcquire()
		require.NoError(t, err)
		p.Failure(errNotFound) // a probe's failure is a verdict, not evidence
		assert.Len(t, got, 3)

		stale, err := newBreaker(t, circuitbreaker.Config{}).TryAcquire()
		require.NoError(t, err)
		stale.Failure(errBoom) // another breaker's
		b.Reset()
		p, err = b.TryAcquire()
		require.NoError(t, err)
		b.Reset()
		assert.False(t, p.Failure(errBoom), "stale")
		assert.Len(t, got, 3, "a stale failure is not reported")
		stop()
		fail(t, b, 1, errBoom)
		assert.Len(t, got, 3, "unsubscribed")
	})
}

func TestRemote_CB23_OwnOpenTransitionCarriesItsCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 7 * time.Second})
		rec := record(b)
		fail(t, b, 1, errBoom)
		assert.Equal(t, []circuitbreaker.Transition{{
			From: circuitbreaker.Closed, To: circuitbreaker.Open, Time: time.Now(), Cause: errBoom, RetryAfter: 7 * time.Second,
			Counts: circuitbreaker.Counts{ConsecutiveFailures: 1, Calls: 1, Failures: 1},
		}}, rec.all())
	})
}

func TestRemote_CB23_ANewEndRearmsTheCooldownTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{})
		_, _ = b.ApplyRemote(circuitbreaker.Open, time.Hour, errFleet)
		_, _ = b.ApplyRemote(circuitbreaker.Open, 2*time.Second, errFleet)
		time.Sleep(2*time.Second - time.Nanosecond)
		assert.Equal(t, time.Nanosecond, openErr(t, b).RetryAfter())
		time.Sleep(time.Nanosecond)
		p, err := b.TryAcquire()
		require.NoError(t, err, "the shorter end holds, not the hour")
		p.Success()

		// A longer end over a shorter one: no probe before it.
		_, _ = b.ApplyRemote(circuitbreaker.Open, time.Second, errFleet)
		_, _ = b.ApplyRemote(circuitbreaker.Open, time.Minute, errFleet)
		time.Sleep(time.Second)
		assert.Equal(t, 59*time.Second, openErr(t, b).RetryAfter())
	})
}

// A remote Open that moves the end of an Open is no transition for the
// listeners; the Observer is told of the new end, as a transition from
// open to open carrying the rest of the Open, so that what it reports
// follows State.
func TestRemote_CB23_ANewEndIsToldToTheObserverOnly(t *testing.T) {
	var events []observe.Event
	var transitions []circuitbreaker.Transition
	b, err := circuitbreaker.New(circuitbreaker.Config{Observer: observe.Func(func(_ context.Context, e observe.Event) {
		if e.Kind == observe.Transition {
			events = append(events, e)
		}
	})})
	require.NoError(t, err)
	b.Subscribe(func(tr circuitbreaker.Transition) { transitions = append(transitions, tr) })
	_, _ = b.ApplyRemote(circuitbreaker.Open, time.Hour, errFleet)
	_, _ = b.ApplyRemote(circuitbreaker.Open, 2*time.Second, errFleet)
	require.Len(t, transitions, 1, "only the Open")
	assert.Equal(t, circuitbreaker.Open, transitions[0].To)
	require.Len(t, events, 2)
	assert.Equal(t, observe.Event{Source: observe.Breaker, Kind: observe.Transition, From: "closed", To: "open", Err: errFleet, Duration: time.Hour}, events[0])
	assert.Equal(t, observe.Event{Source: observe.Breaker, Kind: observe.Transition, From: "open", To: "open", Err: errFleet, Duration: 2 * time.Second}, events[1])
}

// TestHammer_CB23_RemoteChanges drives a breaker from many goroutines while
// remote changes arrive, and checks that probes in flight never exceed
// MaxProbes and every transition is legal and in order.
func TestHammer_CB23_RemoteChanges(t *testing.T) {
	const maxProbes = 2
	b := newBreaker(t, circuitbreaker.Config{
		Policy:    circuitbreaker.Consecutive{Failures: 2},
		CoolDown:  circuitbreaker.Immediate,
		MaxProbes: maxProbes,
	})
	var (
		mu   sync.Mutex
		last = circuitbreaker.Closed
		bad  []string
	)
	b.Subscribe(func(tr circuitbreaker.Transition) {
		mu.Lock()
		defer mu.Unlock()
		if tr.From != last || !legal[[2]circuitbreaker.State{tr.From, tr.To}] {
			bad = append(bad, tr.String())
		}
		if tr.Remote && tr.To == circuitbreaker.HalfOpen {
			bad = append(bad, "a cool-down's end marked remote: "+tr.String())
		}
		last = tr.To
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range 3000 {
				if g == 0 {
					switch r.IntN(3) {
					case 0:
						_, _ = b.ApplyRemote(circuitbreaker.Open, time.Duration(r.IntN(2))*time.Microsecond, errFleet)
					case 1:
						_, _ = b.ApplyRemote(circuitbreaker.Open, 0, nil)
					default:
						_, _ = b.ApplyRemote(circuitbreaker.Closed, 0, nil)
					}
					continue
				}
				p, err := b.TryAcquire()
				if err != nil {
					continue
				}
				if s := b.State(); s.ProbesInFlight > maxProbes {
					t.Errorf("%d probes in flight", s.ProbesInFlight)
				}
				if r.IntN(2) == 0 {
					p.Failure(errBoom)
				} else {
					p.Success()
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, bad)
}

func TestRemote_CB23_FailureEvidenceAllocatesNothing(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1_000_000}})
	signal := make(chan struct{}, 1)
	b.SubscribeFailures(func(error) {
		select {
		case signal <- struct{}{}:
		default:
		}
	})
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := b.TryAcquire()
		p.Failure(errBoom)
		p, _ = b.TryAcquire()
		p.Success()
	})
	assert.Equal(t, 0.0, allocs)
	assert.Len(t, signal, 1)
}

// ApplyRemote of a nil *Breaker is an error, as Tune's is, not a panic.
func TestApplyRemote_CB23_NilBreaker(t *testing.T) {
	var b *circuitbreaker.Breaker
	changed, err := b.ApplyRemote(circuitbreaker.Open, time.Second, nil)
	assert.False(t, changed)
	assert.EqualError(t, err, "circuitbreaker: ApplyRemote of a nil *Breaker")
}
