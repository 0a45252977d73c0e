package circuitbreaker_test

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

	"github.com/rampart-go/rampart/circuitbreaker"
)

// seen is a TripFunc that records every Counts it is given and trips when
// trip says so.
type seen struct {
	got  []circuitbreaker.Counts
	trip func(circuitbreaker.Counts) bool
}

func (s *seen) policy() circuitbreaker.TripFunc {
	return func(c circuitbreaker.Counts) bool {
		s.got = append(s.got, c)
		return s.trip != nil && s.trip(c)
	}
}

func TestTripFunc_CB17_CountsAfterEachOutcome(t *testing.T) {
	s := &seen{}
	b := newBreaker(t, circuitbreaker.Config{
		Policy:    s.policy(),
		IsFailure: func(err error) bool { return !errors.Is(err, errNotFound) },
	})
	finish := func(f func(p *circuitbreaker.Permit)) {
		p, err := b.TryAcquire()
		require.NoError(t, err)
		f(&p)
	}
	finish(func(p *circuitbreaker.Permit) { p.Success() })
	finish(func(p *circuitbreaker.Permit) { p.Failure(errBoom) })
	finish(func(p *circuitbreaker.Permit) { p.Ignore() })                       // not counted
	finish(func(p *circuitbreaker.Permit) { p.Done(context.Canceled) })         // ignored
	finish(func(p *circuitbreaker.Permit) { p.Done(errNotFound) })              // a success by IsFailure
	finish(func(p *circuitbreaker.Permit) { p.Failure(nil) })                   // a failure without an error
	finish(func(p *circuitbreaker.Permit) { p.Done(context.DeadlineExceeded) }) // a failure
	finish(func(p *circuitbreaker.Permit) { p.Success() })

	assert.Equal(t, []circuitbreaker.Counts{
		{Calls: 1, Successes: 1, ConsecutiveSuccesses: 1},
		{Calls: 2, Successes: 1, Failures: 1, ConsecutiveFailures: 1, LastError: errBoom},
		{Calls: 3, Successes: 2, Failures: 1, ConsecutiveSuccesses: 1, LastError: errBoom},
		{Calls: 4, Successes: 2, Failures: 2, ConsecutiveFailures: 1},
		{Calls: 5, Successes: 2, Failures: 3, ConsecutiveFailures: 2, LastError: context.DeadlineExceeded},
		{Calls: 6, Successes: 3, Failures: 3, ConsecutiveSuccesses: 1, LastError: context.DeadlineExceeded},
	}, s.got)
	assert.Equal(t, circuitbreaker.Snapshot{Counts: s.got[5]}, b.State(), "the snapshot has the counts TripFunc saw last")
}

func TestTripFunc_CB17_TripsWhenTheFuncSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errAuth := errors.New("auth rejected")
		s := &seen{trip: func(c circuitbreaker.Counts) bool {
			return errors.Is(c.LastError, errAuth) || c.ConsecutiveFailures >= 3
		}}
		b := newBreaker(t, circuitbreaker.Config{Policy: s.policy(), CoolDown: time.Minute})
		fail(t, b, 2, errBoom)
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		fail(t, b, 1, errAuth)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Minute, Cause: errAuth}, b.State())

		b.Reset()
		fail(t, b, 3, errBoom)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Minute, Cause: errBoom}, b.State())
	})
}

// A TripFunc may trip on a success (a ratio reached once enough calls were
// made); the cause is then the period's last failure.
func TestTripFunc_CB17_TripOnSuccessHasLastErrorAsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool {
			return c.Calls >= 4 && 2*c.Failures >= c.Calls
		})
		b := newBreaker(t, circuitbreaker.Config{Policy: policy, CoolDown: time.Minute})
		fail(t, b, 1, errBoom)
		fail(t, b, 1, errNotFound)
		succeed(t, b, 1)
		assert.Equal(t, circuitbreaker.Closed, b.State().State)
		succeed(t, b, 1)
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: time.Minute, Cause: errNotFound}, b.State())
	})
}

func TestTripFunc_CB17_CountsStartAtZeroInEachClosedPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &seen{trip: func(c circuitbreaker.Counts) bool { return c.Failures >= 2 }}
		b := newBreaker(t, circuitbreaker.Config{Policy: s.policy(), CoolDown: time.Second})
		fail(t, b, 2, errBoom) // trips
		time.Sleep(time.Second)
		succeed(t, b, 1) // the probe closes: not given to the func
		fail(t, b, 1, errNotFound)
		b.Reset()
		succeed(t, b, 1)
		assert.Equal(t, []circuitbreaker.Counts{
			{Calls: 1, Failures: 1, ConsecutiveFailures: 1, LastError: errBoom},
			{Calls: 2, Failures: 2, ConsecutiveFailures: 2, LastError: errBoom},
			{Calls: 1, Failures: 1, ConsecutiveFailures: 1, LastError: errNotFound}, // after the probe closed
			{Calls: 1, Successes: 1, ConsecutiveSuccesses: 1},                       // after Reset
		}, s.got)
	})
}

// In HalfOpen a TripFunc breaker closes after MaxProbes probe successes and
// re-opens on any probe failure, as gobreaker does with MaxRequests.
func TestTripFunc_CB17_HalfOpenFollowsMaxProbes(t *testing.T) {
	tests := []struct {
		name      string
		maxProbes int
		probes    string // S succeeds, F fails, in order, each probe finished before the next
		want      []circuitbreaker.State
	}{
		{name: "default closes on one success", probes: "S", want: []circuitbreaker.State{circuitbreaker.Closed}},
		{name: "default re-opens on a failure", probes: "F", want: []circuitbreaker.State{circuitbreaker.Open}},
		{name: "three need three", maxProbes: 3, probes: "SSS", want: []circuitbreaker.State{
			circuitbreaker.HalfOpen, circuitbreaker.HalfOpen, circuitbreaker.Closed,
		}},
		{name: "a late failure re-opens", maxProbes: 3, probes: "SSF", want: []circuitbreaker.State{
			circuitbreaker.HalfOpen, circuitbreaker.HalfOpen, circuitbreaker.Open,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				policy := circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool { return c.Failures >= 1 })
				b := newBreaker(t, circuitbreaker.Config{Policy: policy, CoolDown: time.Second, MaxProbes: tt.maxProbes})
				fail(t, b, 1, errBoom)
				time.Sleep(time.Second)
				var got []circuitbreaker.State
				for _, o := range tt.probes {
					p, err := b.TryAcquire()
					require.NoError(t, err)
					if o == 'S' {
						p.Success()
					} else {
						p.Failure(errBoom)
					}
					got = append(got, b.State().State)
				}
				assert.Equal(t, tt.want, got)
			})
		})
	}
}

func TestTripFunc_CB13_NilIsAnError(t *testing.T) {
	_, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.TripFunc(nil)})
	assert.EqualError(t, err, "circuitbreaker: Config.Policy is a nil circuitbreaker.TripFunc")
	_, err = circuitbreaker.TripFunc(nil).NewTracker()
	assert.EqualError(t, err, "circuitbreaker: TripFunc is nil")
}

// TestTripFunc_CB17_Hammer drives a TripFunc breaker from many goroutines,
// tripping and closing all the time, and checks inside the func that it is
// never called concurrently for one breaker and that the counts are
// consistent. Run it with -race.
func TestTripFunc_CB17_Hammer(t *testing.T) {
	const maxProbes = 2
	var inside atomic.Int32
	policy := circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool {
		if inside.Add(1) != 1 {
			t.Error("the func was called concurrently for one breaker")
		}
		defer inside.Add(-1)
		if c.Calls != c.Successes+c.Failures || c.ConsecutiveSuccesses > c.Successes ||
			c.ConsecutiveFailures > c.Failures || (c.ConsecutiveSuccesses != 0 && c.ConsecutiveFailures != 0) {
			t.Errorf("inconsistent counts %+v", c)
		}
		return c.ConsecutiveFailures >= 3
	})
	b := newBreaker(t, circuitbreaker.Config{Policy: policy, CoolDown: circuitbreaker.Immediate, MaxProbes: maxProbes})
	var trips atomic.Int64
	b.Subscribe(func(tr circuitbreaker.Transition) {
		if tr.To == circuitbreaker.Open {
			trips.Add(1)
		}
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 3000 {
				p, err := b.TryAcquire()
				if err != nil {
					continue
				}
				switch (i*7 + g) % 5 {
				case 0, 1, 2:
					p.Failure(errBoom)
				case 3:
					p.Ignore()
				default:
					p.Success()
				}
				if i%16 == 0 {
					s := b.State()
					assert.LessOrEqual(t, s.ProbesInFlight, maxProbes)
					assert.LessOrEqual(t, s.Counts.Failures, s.Counts.Calls)
				}
			}
		})
	}
	wg.Wait()
	assert.NotZero(t, trips.Load(), "the policy tripped")

	b.Reset()
	fail(t, b, 2, errBoom)
	succeed(t, b, 1)
	assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: 3, Successes: 1, Failures: 2, ConsecutiveSuccesses: 1, LastError: errBoom}}, b.State())
}

func TestAllocs_TripFunc_CB17(t *testing.T) {
	policy := circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool { return c.ConsecutiveFailures >= 1000 })
	b := newBreaker(t, circuitbreaker.Config{Policy: policy})
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := b.TryAcquire()
		p.Failure(errBoom)
		q, _ := b.TryAcquire()
		q.Success()
	})
	assert.Zero(t, allocs)
}

func BenchmarkTripFunc_ClosedSuccess(b *testing.B) {
	policy := circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool { return c.ConsecutiveFailures >= 5 })
	br := newBreaker(b, circuitbreaker.Config{Policy: policy})
	b.ReportAllocs()
	for b.Loop() {
		p, _ := br.TryAcquire()
		p.Success()
	}
}

func BenchmarkTripFunc_ClosedSuccessParallel(b *testing.B) {
	policy := circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool { return c.ConsecutiveFailures >= 5 })
	br := newBreaker(b, circuitbreaker.Config{Policy: policy})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, _ := br.TryAcquire()
			p.Success()
		}
	})
}
