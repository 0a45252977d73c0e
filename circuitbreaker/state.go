package circuitbreaker

import (
	"fmt"
	"strings"
	"time"

	"github.com/rampart-go/rampart"
)

// State is the state of a [Breaker]; the forced states are set and left
// only through a [Switch].
type State uint8

const (
	// Closed lets calls through and records their outcomes with the policy.
	Closed State = iota
	// Open refuses every call with an [*OpenError] until the cool-down ends.
	Open
	// HalfOpen admits at most MaxProbes concurrent probes, whose outcomes
	// close or re-open the breaker.
	HalfOpen
	// ForcedOpen refuses every call until the [Switch] is released.
	ForcedOpen
	// ForcedClosed admits every call, recording nothing, until released.
	ForcedClosed
)

// String returns "closed", "open", "half-open", "forced-open" or
// "forced-closed".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	case ForcedOpen:
		return "forced-open"
	case ForcedClosed:
		return "forced-closed"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Snapshot is the state of a [Breaker] at one moment. Fields that do not
// apply to the state are zero.
type Snapshot struct {
	// Name is the breaker's [Config.Name].
	Name string
	// State is the state: HalfOpen once a cool-down has passed.
	State State
	// Counts are the policy's counters of the current Closed period.
	Counts Counts
	// RetryAfter is the rest of the cool-down ([rampart.Forever] if forced open).
	RetryAfter time.Duration
	// Cause is the trip's failure, or the reason given to [Switch.ForceOpen].
	Cause error
	// ProbesInFlight, ProbesSucceeded and ProbesFailed count the probes
	// of the current HalfOpen period (an expired lease is not in flight).
	ProbesInFlight, ProbesSucceeded, ProbesFailed int
	// Remote is true for an Open (and the HalfOpen after it) imposed by
	// [Breaker.ApplyRemote].
	Remote bool
}

// Transition is one change of a [Breaker]'s state, as listeners see it.
type Transition struct {
	// Name is the breaker's [Config.Name].
	Name string
	// From and To are the states before and after (equal for a ForcedOpen
	// that only changes its reason).
	From, To State
	// Time is when it took effect, by the wall clock (for Open → HalfOpen,
	// when the cool-down ended).
	Time time.Time
	// Cause is the failure behind a transition to Open, or the reason for
	// one to ForcedOpen; nil otherwise.
	Cause error
	// RetryAfter is the cool-down of a transition to Open, else zero.
	RetryAfter time.Duration
	// Counts, for a trip (a transition to Open made by the breaker
	// itself), are the counts it was decided on, so that a log says why
	// the breaker opened: from Closed, the policy's (a run of N
	// consecutive failures is N calls, N failures; a window's calls,
	// failures and slow calls); from HalfOpen, the probes judged (Calls)
	// and failed (Failures). Zero otherwise.
	Counts Counts
	// Remote is true for a transition applied with [Breaker.ApplyRemote],
	// false for one this breaker made itself (the ones to share).
	Remote bool

	// moved marks the end of an Open moved by ApplyRemote: no transition,
	// delivered to the Observer only (see observeTransitions).
	moved bool
}

// State returns a snapshot of the breaker without changing its state,
// the zero Snapshot for a nil b. Safe for concurrent use.
func (b *Breaker) State() Snapshot {
	if b == nil {
		return Snapshot{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setUp()
	now := b.mono()
	per := b.period.Load()
	s := Snapshot{Name: b.set.name, State: stateOf(b.word.Load())}
	switch s.State {
	case Closed:
		s.Counts = countsOf(b.tracker)
	case Open:
		s.Cause, s.Remote = per.cause, per.remote
		switch {
		case per.until == never:
			s.RetryAfter = rampart.Forever
		case now < per.until:
			s.RetryAfter = time.Duration(per.until - now)
		default:
			s.State = HalfOpen
		}
	case HalfOpen:
		s.Cause, s.Remote = per.cause, per.remote
		for _, p := range b.probes {
			if p.expiry > now {
				s.ProbesInFlight++
			}
		}
		s.ProbesSucceeded, s.ProbesFailed = b.succeeded, b.failed
	case ForcedOpen:
		s.Cause, s.RetryAfter = per.cause, rampart.Forever
	}
	return s
}

// String describes the snapshot on one line for logs, in the words of
// [OpenError.Error]. For Closed it gives the run of consecutive failures
// and the policy's counts of calls only when they are not zero, so a
// policy that keeps no counts (Consecutive) is not described as having
// them: "closed", "closed: 2 consecutive failures", "closed: 10 calls, 3
// failures, 0 slow calls counted" (in a FailureRate's window, or since
// the Closed period began for a TripFunc).
func (s Snapshot) String() string {
	var b strings.Builder
	if s.Name != "" {
		fmt.Fprintf(&b, "%q: ", s.Name)
	}
	b.WriteString(s.State.String())
	switch s.State {
	case Closed:
		// Only the counters that hold something: a policy that keeps no
		// counts of calls (Consecutive) leaves those at zero, and "0
		// calls" would describe counts it lacks.
		c := s.Counts
		sep := ": "
		if c.ConsecutiveFailures != 0 {
			fmt.Fprintf(&b, ": %d consecutive failures", c.ConsecutiveFailures)
			sep = "; "
		}
		if c.Calls != 0 || c.Failures != 0 || c.SlowCalls != 0 {
			fmt.Fprintf(&b, "%s%d calls, %d failures, %d slow calls counted", sep, c.Calls, c.Failures, c.SlowCalls)
		}
	case Open:
		b.WriteString(" (" + waitText(s.RetryAfter) + ")")
	case ForcedOpen:
		b.WriteString(" (until released)")
	case HalfOpen:
		fmt.Fprintf(&b, ": probes %d in flight, %d succeeded, %d failed",
			s.ProbesInFlight, s.ProbesSucceeded, s.ProbesFailed)
	}
	b.WriteString(causeText(s.State, s.Cause))
	return b.String()
}

// String describes the transition on one line for logs, as in
// `"payments": closed > open: tripped by: connection refused`.
func (t Transition) String() string {
	s := t.From.String() + " > " + t.To.String()
	if t.Name != "" {
		s = fmt.Sprintf("%q: %s", t.Name, s)
	}
	return s + causeText(t.To, t.Cause)
}
