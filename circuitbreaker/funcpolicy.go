package circuitbreaker

import (
	"errors"

	"github.com/rampart-go/rampart"
)

// Counts is the one tally of the current Closed period: what a [TripFunc]
// is given after each counted outcome (gobreaker's Counts, with the last
// error and the slow calls) and what [Breaker.State] reports. A policy
// fills the fields it keeps and leaves the others zero: [Consecutive] the
// runs, a [Window] policy the counts of its window.
type Counts struct {
	// Calls is Successes + Failures: in a [Window], the calls in it.
	Calls int
	// Successes and Failures count the outcomes of the period or window.
	Successes, Failures int
	// SlowCalls counts the calls in the window that [SlowCalls] judged
	// slow.
	SlowCalls int
	// ConsecutiveSuccesses and ConsecutiveFailures are the current runs.
	ConsecutiveSuccesses, ConsecutiveFailures int
	// LastError is the error of the period's last failure, if any.
	LastError error
}

// TripFunc is a [Policy] of one function (gobreaker's ReadyToTrip), given
// the Closed period's [Counts] after each counted outcome; true trips. To
// trip on an authentication error or after five consecutive failures:
//
//	circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool {
//		return errors.Is(c.LastError, ErrAuth) || c.ConsecutiveFailures >= 5
//	})
//
// In HalfOpen a probe failure re-opens and MaxProbes successes close. It
// runs under the breaker's lock and must not call the breaker.
type TripFunc func(Counts) bool

// errNilTripFunc is what NewTracker returns for a nil TripFunc.
var errNilTripFunc = errors.New("circuitbreaker: TripFunc is nil")

// NewTracker returns the state of f for one Breaker; a nil f is an error.
func (f TripFunc) NewTracker() (Tracker, error) {
	if f == nil {
		return nil, errNilTripFunc
	}
	return &tripFunc{trip: f}, nil
}

// tripFunc keeps the Counts of one breaker. Every method but wantsSuccess
// is called with the breaker's lock held, so the counts need no lock of
// their own; wantsSuccess reads nothing.
type tripFunc struct {
	trip TripFunc
	c    Counts // guarded by the breaker's lock
}

func (t *tripFunc) timingNeeded() timing { return timingNone }

// wantsSuccess is always true: every success changes the counts.
func (t *tripFunc) wantsSuccess() bool { return true }

func (t *tripFunc) Record(call Call) bool {
	c := &t.c
	c.Calls++
	if call.Outcome == rampart.Success {
		c.Successes++
		c.ConsecutiveSuccesses++
		c.ConsecutiveFailures = 0
	} else {
		c.Failures++
		c.ConsecutiveFailures++
		c.ConsecutiveSuccesses = 0
		c.LastError = call.Err
	}
	return t.trip(*c)
}

// Probe is gobreaker's half-open rule with MaxProbes as MaxRequests.
func (t *tripFunc) Probe(call Call, p Probes) Verdict {
	return consecutiveProbes(call, p, p.Max)
}

func (t *tripFunc) Reset(State) { t.c = Counts{} }

func (t *tripFunc) Counts() Counts { return t.c }
