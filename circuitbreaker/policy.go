package circuitbreaker

import (
	"fmt"
	"reflect"
	"time"

	"github.com/rampart-go/rampart/clock"
)

// Policy decides when a [Breaker] trips and when its probes close it again.
// A Policy is configuration, not state (a struct literal such as
// [Consecutive]{Failures: 5}), so one value may configure many breakers:
// [New] calls NewTracker once per Breaker. A user policy implements Policy
// and [Tracker]; [TripFunc] is a policy of one function. The idea of a
// pluggable policy comes from the review of the Tower circuit-breaker pull
// request (a breaker is a concept; a failure monitor is one mechanism).
type Policy interface {
	// NewTracker validates the policy and returns fresh state for one
	// Breaker, or an error naming the bad field, which New returns
	// unchanged.
	NewTracker() (Tracker, error)
}

// Tracker is the state a [Policy] keeps for one [Breaker]: the counters of
// the Closed state and the judgement of probes in HalfOpen. The built-in
// policies use this contract and nothing else.
//
// The breaker calls Record, Probe, Reset and Counters (and
// [TripCauser.TripCause]) with its lock held, one at a time: they need no
// locking of their own and must not call the Breaker. WantsSuccess is
// called without the lock, concurrently, and must be safe for concurrent
// use. Timing is called once, by [New].
type Tracker interface {
	// Timing reports which clock readings the tracker needs in [Call]; the
	// breaker reads the clock only when asked to.
	Timing() Timing

	// WantsSuccess reports whether a success in Closed must be recorded
	// with Record. While it returns false the breaker counts successes
	// without its lock: [Consecutive] returns false while no failure is
	// pending, so a healthy breaker's success costs a few atomic loads.
	WantsSuccess() bool

	// Record records one counted outcome (Success or Failure) of a call
	// admitted in the current Closed period and reports whether the
	// breaker must trip. The cause of a trip is c.Err for a failure; for a
	// success, the tracker's TripCause if it is a [TripCauser], else the
	// period's last failure.
	Record(c Call) (trip bool)

	// Probe judges the probes of the current HalfOpen period after each
	// counted probe outcome c (p includes c). Values other than
	// VerdictClose and VerdictReopen count as VerdictPending.
	Probe(c Call, p Probes) Verdict

	// Reset clears the tracker's history when the breaker enters Closed
	// or HalfOpen (the state being entered), and on [Breaker.Reset].
	Reset(entering State)

	// Counters returns the counters for [Breaker.State]; fields the policy
	// does not keep are zero.
	Counters() Counters
}

// SuccessCounter is an optional interface of a [Tracker] that can count a
// success in Closed without the breaker's lock, as the time window of
// [FailureRate] does. When [Tracker.WantsSuccess] returns true, the breaker
// calls CountSuccess, without its lock and concurrently with other calls
// of every method; true means the success is counted (Record is not
// called for it), false that the breaker must call Record with its lock
// held, as it does for a tracker without this interface. CountSuccess must
// return false for a success that could trip the breaker, and a success it
// counts concurrently with Reset must not be counted after it.
type SuccessCounter interface {
	CountSuccess() bool
}

// TripCauser is an optional interface of a [Tracker] that trips (in
// [Tracker.Record]) or re-opens (in [Tracker.Probe]) on a success for a
// reason of its own, as [SlowCalls] does: TripCause, called right after
// that decision, returns the cause to report, or nil for the default (the
// last failure).
type TripCauser interface {
	TripCause() error
}

// ClockUser is an optional interface of a [Tracker] that reads the time
// outside Record and Probe, as the time window of [FailureRate] does for
// its Counters and its timers. [New] calls UseClock once, after NewTracker
// and before the breaker is used, with the breaker's clock: never nil, it
// reads and arms timers on [Config.Clock], or on the system's clock when
// that is nil, and its Monotonic readings share the origin of
// [Call.Monotonic], so the tracker can compare the two. The clock is safe
// for concurrent use; a timer's function runs on its own goroutine, without
// the breaker's lock, so it must lock what it shares with the tracker's
// other methods.
type ClockUser interface {
	UseClock(c clock.Clock)
}

// Timing is the set of clock readings a [Tracker] asks for. The zero value
// asks for none.
type Timing uint8

const (
	// TimingNone asks for no clock reading.
	TimingNone Timing = 0
	// TimingNow asks for [Call.Now]: one clock read per outcome.
	TimingNow Timing = 1
	// TimingLatency asks for [Call.Latency] and [Call.Now]: a clock read
	// when the permit is issued and one per outcome.
	TimingLatency Timing = 2
)

// Call is one counted outcome, as a [Tracker] sees it.
type Call struct {
	// Outcome is Success or Failure.
	Outcome Outcome
	// Err is the error of a failure; nil for a success, and possibly for
	// a failure judged from a response.
	Err error
	// Now is when the outcome was recorded, by the wall clock (with
	// TimingNow or TimingLatency): a timestamp, not for measuring time.
	Now time.Time
	// Monotonic is when the outcome was recorded, as the time since an
	// origin fixed by the breaker on its monotonic clock (with TimingNow
	// or TimingLatency): the difference of two readings is a duration
	// that no step of the wall clock changes. Time windows use it.
	Monotonic time.Duration
	// Latency is how long the call ran, from the permit to the outcome, on
	// the monotonic clock (with TimingLatency).
	Latency time.Duration
}

// Probes is the tally of the current HalfOpen period given to
// [Tracker.Probe].
type Probes struct {
	// InFlight is the number of probes admitted and not yet finished.
	InFlight int
	// Succeeded and Failed count the probes judged so far, the current
	// one included.
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

// Counters are a policy's Closed-state counters, reported by
// [Breaker.State]; a policy fills the fields it keeps.
type Counters struct {
	// ConsecutiveFailures is the current run of failures.
	ConsecutiveFailures int
	// Calls, Failures and SlowCalls count the outcomes in a [Window].
	Calls, Failures, SlowCalls int
}

// maxCount bounds every count in a configuration. Larger values are
// rejected as absurd: a threshold of a million consecutive failures
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
