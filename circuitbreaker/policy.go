package circuitbreaker

import (
	"fmt"
	"reflect"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
)

// Policy decides when a [Breaker] trips and when its probes close it; one
// value may configure many breakers. The idea of a pluggable policy comes
// from the review of the Tower circuit-breaker pull request.
type Policy interface {
	// NewTracker validates the policy and returns fresh state for one
	// Breaker, or an error naming the bad field.
	NewTracker() (Tracker, error)
}

// Tracker is the state a [Policy] keeps for one [Breaker]: three methods,
// which the breaker calls with its lock held, one at a time (they must not
// call the Breaker). A Tracker may also have a method Counts() [Counts],
// which [Breaker.State] reports (zero counts without it), and may be a
// [TripCauser] or a [ClockUser]. A user's Tracker is given every success and every time
// reading of [Call]; the built-in policies' trackers skip the lock for
// successes that change nothing and read only the clock they need,
// through methods of their own that the breaker looks for.
type Tracker interface {
	// Record records one outcome of the current Closed period and reports
	// whether the breaker must trip.
	Record(c Call) (trip bool)
	// Probe judges the HalfOpen period after each probe outcome c (p
	// includes c); unknown values count as VerdictPending.
	Probe(c Call, p Probes) Verdict
	// Reset clears the history when the breaker enters Closed or HalfOpen
	// (the state being entered), and on [Breaker.Reset].
	Reset(entering State)
}

// TripCauser is an optional [Tracker] interface naming the cause of a trip
// or re-open decided on a success; nil means the last failure.
type TripCauser interface {
	TripCause() error
}

// tripCauseOf returns t's TripCause, or nil if t is not a [TripCauser].
func tripCauseOf(t Tracker) error {
	if tc, ok := t.(TripCauser); ok {
		return tc.TripCause()
	}
	return nil
}

// The fast paths of the built-in trackers, which the breaker finds by type
// assertion, as x/time/rate keeps reserveN to itself. A Tracker without
// them gets what is always correct: every clock reading and every success
// recorded under the lock.
type (
	// timer reports which clock readings the tracker needs in [Call],
	// once, in [New].
	timer interface{ timingNeeded() timing }
	// successWanter reports, without the lock and concurrently with every
	// method, whether a success in Closed must be recorded with Record;
	// false lets the breaker skip its lock.
	successWanter interface{ wantsSuccess() bool }
	// successCounter counts a success without the lock when wantsSuccess
	// is true, concurrently with every method; false sends the success to
	// Record. It must return false for a success that could trip, and not
	// count one across a Reset.
	successCounter interface{ countSuccess() bool }
	// counter is a tracker with counts for [Breaker.State].
	counter interface{ Counts() Counts }
)

// timingOf returns the clock readings t needs: all of them for a tracker
// that does not say.
func timingOf(t Tracker) timing {
	if tm, ok := t.(timer); ok {
		return tm.timingNeeded()
	}
	return timingLatency
}

// wanterOf returns t's successWanter, or one that wants every success.
func wanterOf(t Tracker) successWanter {
	if w, ok := t.(successWanter); ok {
		return w
	}
	return wantsAll{}
}

// wantsAll is the successWanter of a Tracker without one.
type wantsAll struct{}

func (wantsAll) wantsSuccess() bool { return true }

// countsOf returns t's Counts, or zero counts.
func countsOf(t Tracker) Counts {
	if c, ok := t.(counter); ok {
		return c.Counts()
	}
	return Counts{}
}

// ClockUser is an optional interface of a [Tracker] that reads the time
// outside Record and Probe (as the time window of [FailureRate] does).
// [New] calls UseClock once, before the breaker is used, with the
// breaker's clock: never nil ([Config.Clock] or the system's), its
// Monotonic readings on the origin of [Call.Monotonic]. A timer's function
// runs without the breaker's lock.
type ClockUser interface {
	UseClock(c clock.Clock)
}

// giveClock gives c to t if t is a [ClockUser].
func giveClock(t Tracker, c clock.Clock) {
	if u, ok := t.(ClockUser); ok {
		u.UseClock(c)
	}
}

// timing is the set of clock readings a tracker asks for.
type timing uint8

const (
	// timingNone asks for no clock reading.
	timingNone timing = 0
	// timingNow asks for [Call.Now]: one clock read per outcome.
	timingNow timing = 1
	// timingLatency adds [Call.Latency]: one more read per permit.
	timingLatency timing = 2
)

// Call is one counted outcome. A user's [Tracker] gets every field; a
// built-in one only the times it needs.
type Call struct {
	// Outcome is Success or Failure.
	Outcome rampart.Outcome
	// Err is the error of a failure (possibly nil); nil for a success.
	Err error
	// Now is the wall time of the outcome: a timestamp.
	Now time.Time
	// Monotonic is the outcome's time on the breaker's monotonic clock.
	Monotonic time.Duration
	// Latency is how long the call ran.
	Latency time.Duration
}

// Probes is the tally of the current HalfOpen period.
type Probes struct {
	// InFlight is the number of probes admitted and not yet finished.
	InFlight int
	// Succeeded and Failed count the probes judged so far.
	Succeeded, Failed int
	// Max is the breaker's MaxProbes.
	Max int
}

// Verdict is a [Tracker]'s judgement of the probes so far.
type Verdict uint8

const (
	// VerdictPending waits for more probes.
	VerdictPending Verdict = iota
	// VerdictClose closes the breaker.
	VerdictClose
	// VerdictReopen opens the breaker again with a fresh cool-down.
	VerdictReopen
)

// String returns "pending", "close" or "reopen".
func (v Verdict) String() string {
	switch v {
	case VerdictPending:
		return "pending"
	case VerdictClose:
		return "close"
	case VerdictReopen:
		return "reopen"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// maxCount bounds every count in a configuration. Larger values are
// refused as absurd: a threshold of a million consecutive failures
// never trips in practice, and window sizes beyond it waste memory.
const maxCount = 1_000_000

// checkCount validates a count field that must be in [0, maxCount] (zero
// selects the default).
func checkCount(field string, v int) error {
	if v < 0 {
		return fmt.Errorf("circuitbreaker: %s must be >= 0, got %d", field, v)
	}
	if v > maxCount {
		return fmt.Errorf("circuitbreaker: %s must be <= %d, got %d", field, maxCount, v)
	}
	return nil
}

// newTracker is p.NewTracker for a policy held in the named field, with a
// nil pointer or func inside the interface (a nil *FailureRate, say)
// reported as an error naming the field instead of a panic.
func newTracker(field string, p Policy) (Tracker, error) {
	switch v := reflect.ValueOf(p); v.Kind() {
	case reflect.Pointer, reflect.Func:
		if v.IsNil() {
			return nil, fmt.Errorf("circuitbreaker: %s is a nil %T", field, p)
		}
	}
	return p.NewTracker()
}
