package circuitbreaker

import "errors"

// Counts are the outcomes counted in the current Closed period of a
// [Breaker], as a [TripFunc] sees them. They start at zero each time the
// breaker enters Closed (at creation, when probes close it, on
// [Breaker.Reset] and when a [Switch] releases it). They are gobreaker's
// Counts, with the error of the last failure added.
//
// Only counted outcomes are included: a call whose outcome is ignored (the
// caller cancelled it) is not a request here, and an error that
// [Config.IsFailure] says is not a failure counts as a success.
type Counts struct {
	// Requests is the number of counted outcomes: Successes + Failures.
	Requests int
	// Successes and Failures count the outcomes of the period.
	Successes, Failures int
	// ConsecutiveSuccesses and ConsecutiveFailures are the current runs:
	// at most one of them is non-zero.
	ConsecutiveSuccesses, ConsecutiveFailures int
	// LastError is the error of the most recent failure of the period, or
	// nil if there was none (or it failed with a nil error, as a failure
	// judged from a response with [Permit.Failure](nil) does). A success
	// does not clear it.
	LastError error
}

// TripFunc is a [Policy] made of one function: after each counted outcome
// of a call admitted in Closed, the breaker calls the function with the
// period's [Counts], the outcome included, and trips to Open when it
// returns true. It is gobreaker's ReadyToTrip and the Policy trait of the
// Tower circuit-breaker pull request, in a few lines; implement [Tracker]
// for full control.
//
// For example, trip at once on an authentication error and otherwise after
// five consecutive failures:
//
//	circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool {
//		return errors.Is(c.LastError, ErrAuth) || c.ConsecutiveFailures >= 5
//	})
//
// The cause of the trip is the error of the call that tripped it, or, if a
// success did, [Counts.LastError].
//
// In HalfOpen it follows the breaker's MaxProbes, as gobreaker does with
// MaxRequests: a probe failure re-opens the breaker, and MaxProbes probe
// successes close it (one, by default). For another probe rule wrap it in
// [SuccessRate] (its Trip field).
//
// The function is called with the breaker's lock held, one outcome at a
// time for one breaker: it must be quick and must not call the breaker (that
// would deadlock). One TripFunc may configure many breakers, which call it
// concurrently. If it panics, the panic reaches the code that reported the
// outcome, and the outcome is counted as if the function had returned false.
//
// Cost: as every success changes the counts, every outcome takes the
// breaker's lock (where [Consecutive] counts a success in Closed with one
// atomic load). It reads no clock and allocates nothing.
type TripFunc func(Counts) bool

// errNilTripFunc is what NewTracker returns for a nil TripFunc.
var errNilTripFunc = errors.New("circuitbreaker: TripFunc is nil")

// NewTracker returns the state of f for one Breaker: the [Counts] of the
// current Closed period. A nil f is an error.
func (f TripFunc) NewTracker() (Tracker, error) {
	if f == nil {
		return nil, errNilTripFunc
	}
	return &tripFunc{trip: f}, nil
}

// tripFunc keeps the Counts of one breaker. Every method but WantsSuccess
// is called with the breaker's lock held, so the counts need no lock of
// their own; WantsSuccess reads nothing.
type tripFunc struct {
	trip TripFunc
	c    Counts // guarded by the breaker's lock
}

func (t *tripFunc) Timing() Timing { return TimingNone }

// WantsSuccess is always true: every success changes the counts.
func (t *tripFunc) WantsSuccess() bool { return true }

func (t *tripFunc) Record(call Call) bool {
	c := &t.c
	c.Requests++
	if call.Outcome == Success {
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

func (t *tripFunc) Counters() Counters {
	return Counters{ConsecutiveFailures: t.c.ConsecutiveFailures, Calls: t.c.Requests, Failures: t.c.Failures}
}
