package circuitbreaker

import (
	"fmt"
	"reflect"
	"time"
)

// Policy decides when a [Breaker] trips and when its probes close it again
// (CB12). A Policy is a description, usually a small struct literal such as
// [Consecutive]{Failures: 5}: it holds configuration, not state, so one Policy
// value can configure many breakers, from any goroutine (the built-in
// policies are values that NewTracker only reads). [New] calls NewTracker
// once per Breaker to validate the configuration and obtain the mutable
// state.
//
// A user policy plugs in by implementing Policy and [Tracker]; the breaker,
// the permits and the layer do not change. The idea of a pluggable policy
// comes from the review of the Tower circuit-breaker pull request (a breaker
// is a concept; a failure monitor is only one mechanism).
type Policy interface {
	// NewTracker validates the policy and returns fresh state for one
	// Breaker. A bad value is an error naming the field, for example
	// "circuitbreaker: Consecutive.Failures must be >= 0, got -1"; New
	// returns it unchanged.
	NewTracker() (Tracker, error)
}

// Tracker is the state a [Policy] keeps for one [Breaker]: the counters of
// the Closed state and the judgement of probes in the HalfOpen state.
//
// Concurrency: the breaker calls Record, Probe, Reset and Counters with its
// lock held, one at a time, so those methods need no locking of their own and
// must not call the Breaker (that would deadlock). WantsSuccess is the one
// exception: it is called without the lock, concurrently with everything
// else, and must therefore be safe for concurrent use (an atomic load).
// Timing is called once, by [New].
type Tracker interface {
	// Timing reports which clock readings the tracker needs in [Call]. The
	// breaker reads the clock only when asked to, so a policy that only
	// counts costs no clock reads at all. It must return the same value
	// every time; New calls it once.
	Timing() Timing

	// WantsSuccess reports whether a success in Closed must be recorded
	// with Record. When it returns false the breaker counts the success
	// without taking its lock or calling Record. A consecutive-failures
	// tracker returns false while its count is zero, which makes the
	// success path of a healthy breaker a single atomic load. Called
	// without the breaker's lock, concurrently: it must be race-free.
	WantsSuccess() bool

	// Record records one counted outcome of a call admitted in Closed
	// (c.Outcome is Success or Failure, never Ignored) and reports whether
	// the breaker must trip to Open. Outcomes from an earlier epoch never
	// reach Record. The cause of the trip is c.Err for a failure; when a
	// success trips, it is the tracker's [TripCauser.TripCause] if it
	// implements that, else the last failure of this Closed period.
	Record(c Call) (trip bool)

	// Probe judges the probes of the current HalfOpen period after each
	// probe outcome c. p already includes c. Returning VerdictPending
	// waits for more probes; VerdictClose closes the breaker; VerdictReopen
	// opens it again with a fresh cool-down (grown, if Config says so). Any
	// other value counts as VerdictPending. Ignored probes, and probes
	// whose lease expired, never reach Probe.
	Probe(c Call, p Probes) Verdict

	// Reset clears the tracker's history. The breaker calls it when it
	// enters Closed (after a probe verdict, [Breaker.Reset] or a manual
	// release, and [Breaker.Reset] while a Switch forces the breaker) and
	// when it enters HalfOpen, with the state being entered.
	Reset(entering State)

	// Counters returns the tracker's counters for [Breaker.State]. Fields
	// the policy does not keep are zero.
	Counters() Counters
}

// TripCauser is an optional interface of a [Tracker] that can trip (in
// [Tracker.Record]) or re-open (in [Tracker.Probe]) on a success for a
// reason of its own, such as [SlowCalls] on a slow call that succeeded.
// TripCause is called with the breaker's lock held, right after the
// decision, and returns the cause to report ([OpenError.Cause],
// [Transition.Cause]), or nil for the default: the last failure.
type TripCauser interface {
	TripCause() error
}

// Timing is the set of clock readings a [Tracker] asks for. The zero value
// asks for none.
type Timing uint8

const (
	// TimingNone asks for no clock reading: [Call.Now] is zero and
	// [Call.Latency] is zero.
	TimingNone Timing = 0
	// TimingNow asks for [Call.Now], the time the outcome was recorded: one
	// clock read per outcome. Time-window policies need it.
	TimingNow Timing = 1
	// TimingLatency asks for [Call.Latency] (and [Call.Now]): one clock
	// read when the permit is issued and one when the outcome is recorded.
	// Slow-call policies need it. Latency uses the monotonic clock.
	TimingLatency Timing = 2
)

// Call is one counted outcome, as a [Tracker] sees it.
type Call struct {
	// Outcome is Success or Failure; ignored outcomes are never recorded.
	Outcome Outcome
	// Err is the error the call failed with. It is nil for a success, and
	// may be nil for a failure classified from a response (an HTTP 503).
	Err error
	// Now is when the outcome was recorded; zero unless the tracker's
	// Timing asked for it.
	Now time.Time
	// Latency is how long the call ran, from the permit being issued to the
	// outcome, on the monotonic clock; zero unless the tracker's Timing is
	// TimingLatency.
	Latency time.Duration
}

// Probes is the tally of the current HalfOpen period given to
// [Tracker.Probe].
type Probes struct {
	// InFlight is the number of probes admitted and not yet finished (the
	// probe being judged is no longer in flight).
	InFlight int
	// Succeeded and Failed count the probes judged so far in this HalfOpen
	// period, including the one being judged.
	Succeeded, Failed int
	// Max is the breaker's MaxProbes: at most this many probes are in
	// flight at once.
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
// [Breaker.State]. A policy fills the fields it keeps and leaves the others
// zero.
type Counters struct {
	// ConsecutiveFailures is the current run of failures with no success
	// between them.
	ConsecutiveFailures int
	// Calls, Failures and SlowCalls count the outcomes in a window (the
	// last N calls or the last period of time).
	Calls, Failures, SlowCalls int
}

// maxCount bounds every count in a configuration. Larger values are
// rejected as absurd (CB13): a threshold of a million consecutive failures
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
