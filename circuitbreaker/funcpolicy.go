package circuitbreaker

import "errors"

// Counts are the counted outcomes of the current Closed period, as a
// [TripFunc] sees them: gobreaker's Counts, with the last error. They
// start at zero each time the breaker enters Closed; ignored outcomes are
// not included.
type Counts struct {
	// Requests is the number of counted outcomes: Successes + Failures.
	Requests int
	// Successes and Failures count the outcomes of the period.
	Successes, Failures int
	// ConsecutiveSuccesses and ConsecutiveFailures are the current runs:
	// at most one of them is non-zero.
	ConsecutiveSuccesses, ConsecutiveFailures int
	// LastError is the error of the period's most recent failure (nil if
	// none, or if it had none); a success does not clear it.
	LastError error
}

// TripFunc is a [Policy] made of one function (gobreaker's ReadyToTrip):
// after each counted outcome in Closed, the breaker calls it with the
// period's [Counts], that outcome included, and trips when it returns
// true. For example, trip at once on an authentication error, otherwise
// after five consecutive failures:
//
//	circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool {
//		return errors.Is(c.LastError, ErrAuth) || c.ConsecutiveFailures >= 5
//	})
//
// In HalfOpen a probe failure re-opens and MaxProbes probe successes
// close (wrap it in [SuccessRate] for another rule).
//
// The function runs with the breaker's lock held, one outcome at a time
// per breaker, on every outcome (successes included): it must be quick and
// must not call the breaker. If it panics, the panic reaches the code that
// reported the outcome, which counts as if it had returned false.
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
