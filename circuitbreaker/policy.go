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

// Tracker is the state a [Policy] keeps for one [Breaker]. The breaker
// calls Record, Probe, Reset, Counters and [TripCauser.TripCause] with its
// lock held, one at a time (they must not call the Breaker);
// WantsSuccess concurrently, without the lock; Timing once, in [New].
type Tracker interface {
	// Timing reports which clock readings the tracker needs in [Call].
	Timing() Timing
	// WantsSuccess reports whether a success in Closed must be recorded
	// with Record; false lets the breaker skip its lock.
	WantsSuccess() bool
	// Record records one outcome of the current Closed period and reports
	// whether the breaker must trip.
	Record(c Call) (trip bool)
	// Probe judges the HalfOpen period after each probe outcome c (p
	// includes c); unknown values count as VerdictPending.
	Probe(c Call, p Probes) Verdict
	// Reset clears the history when the breaker enters Closed or HalfOpen
	// (the state being entered), and on [Breaker.Reset].
	Reset(entering State)
	// Counters returns the counters for [Breaker.State].
	Counters() Counters
}

// SuccessCounter is an optional [Tracker] interface: when WantsSuccess is
// true, CountSuccess is called without the lock, concurrently with every
// method, and false sends the success to Record. It must return false for
// a success that could trip, and not count one across a Reset.
type SuccessCounter interface {
	CountSuccess() bool
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

// ClockUser is an optional interface of a [Tracker] that reads the time
// outside Record and Probe (as the time window of [FailureRate] does). [New]
// calls UseClock once, before the breaker is used, with the breaker's
// clock: never nil ([Config.Clock] or the system's), its Monotonic readings
// on the origin of [Call.Monotonic]. A timer's function runs without the
// breaker's lock.
type ClockUser interface {
	UseClock(c clock.Clock)
}

// useClock gives c to t if t is a [ClockUser].
func useClock(t Tracker, c clock.Clock) {
	if u, ok := t.(ClockUser); ok {
		u.UseClock(c)
	}
}

// Timing is the set of clock readings a [Tracker] asks for.
type Timing uint8

const (
	// TimingNone asks for no clock reading.
	TimingNone Timing = 0
	// TimingNow asks for [Call.Now]: one clock read per outcome.
	TimingNow Timing = 1
	// TimingLatency adds [Call.Latency]: one more read per permit.
	TimingLatency Timing = 2
)

// Call is one counted outcome; its times are set as [Timing] asks.
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

// Counters are a policy's Closed-state counters; a policy fills the
// fields it keeps.
type Counters struct {
	// ConsecutiveFailures is the current run of failures.
	ConsecutiveFailures int
	// Calls, Failures and SlowCalls count the outcomes in a [Window].
	Calls, Failures, SlowCalls int
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

// orDefault returns v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
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
