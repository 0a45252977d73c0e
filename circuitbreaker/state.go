package circuitbreaker

import (
	"fmt"
	"strings"
	"time"
)

// State is the state of a [Breaker].
//
// A breaker goes Closed → Open → HalfOpen → Closed, or HalfOpen →
// Open when probes fail. ForcedOpen and ForcedClosed are set by a [Switch]
// and left only through it: a forced state is visible as such.
type State uint8

const (
	// Closed lets calls through and records their outcomes with the policy.
	Closed State = iota
	// Open rejects every call with an [*OpenError] until the cool-down ends.
	Open
	// HalfOpen admits at most MaxProbes concurrent probe calls, whose
	// outcomes decide whether the breaker closes or opens again.
	HalfOpen
	// ForcedOpen rejects every call until the [Switch] is released.
	ForcedOpen
	// ForcedClosed lets every call through and records nothing until the
	// [Switch] is released.
	ForcedClosed
)

// String returns the state's name: "closed", "open", "half-open",
// "forced-open" or "forced-closed".
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

// Snapshot is the state of a [Breaker] at one moment, returned by
// [Breaker.State]. Fields that do not apply to the state are zero.
type Snapshot struct {
	// Name is the breaker's [Config.Name].
	Name string
	// State is the state. Once an Open breaker's cool-down has passed it is
	// HalfOpen, even before a call has started a probe.
	State State
	// Counters are the policy's counters of the current Closed period;
	// zero in every other state (ForcedClosed included).
	Counters Counters
	// RetryAfter is the exact rest of the cool-down (Open), or [Forever]
	// for ForcedOpen and for an Open breaker whose cool-down is Forever.
	RetryAfter time.Duration
	// Cause is the failure that tripped the breaker (Open, HalfOpen), or the
	// reason given to [Switch.ForceOpen] (ForcedOpen).
	Cause error
	// ProbesInFlight, ProbesSucceeded and ProbesFailed describe the probes
	// of the current HalfOpen period. A probe whose lease expired is no
	// longer in flight.
	ProbesInFlight, ProbesSucceeded, ProbesFailed int
	// Remote is true for an Open period imposed by [Breaker.ApplyRemote]
	// and the HalfOpen that follows it.
	Remote bool
}

// Transition is one change of a [Breaker]'s state, given to the listeners
// registered with [Breaker.Subscribe].
type Transition struct {
	// Name is the breaker's [Config.Name].
	Name string
	// From and To are the states before and after. They are equal for a
	// ForcedOpen that only changes its reason.
	From, To State
	// Time is when the transition took effect, by the wall clock: for
	// Open → HalfOpen, when the cool-down ended.
	Time time.Time
	// Cause is the failure that caused a transition to Open (the last
	// probe failure, or [ErrSlowCalls], from HalfOpen), the reason for a
	// transition to ForcedOpen, and nil otherwise.
	Cause error
	// RetryAfter is, for a transition to Open, how long the breaker stays
	// Open before it admits a probe ([Forever] for no end, zero for an
	// Immediate cool-down); zero otherwise.
	RetryAfter time.Duration
	// Remote is true for a transition applied with [Breaker.ApplyRemote]
	// (state shared by other processes), false for one this breaker made
	// itself. A component that shares the breaker's state publishes only
	// the transitions whose Remote is false.
	Remote bool
}

// State returns a snapshot of the breaker. It does not change the state:
// an Open breaker whose cool-down has passed is reported as HalfOpen
// before the next acquire makes the transition. Safe for concurrent use.
func (b *Breaker) State() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setUp()
	now := b.mono()
	per := b.period.Load()
	s := Snapshot{Name: b.set.name, State: stateOf(b.word.Load())}
	switch s.State {
	case Closed:
		s.Counters = b.tracker.Counters()
	case Open:
		s.Cause, s.Remote = per.cause, per.remote
		switch {
		case per.until == never:
			s.RetryAfter = Forever
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
		s.Cause, s.RetryAfter = per.cause, Forever
	}
	return s
}

// String describes the snapshot on one line, for logs, in the words of
// [OpenError.Error]: the name (if any), the state and the fields that
// apply to it, for example `"payments": open (retry after 1.5s): tripped
// by: connection refused` (the rest of the cool-down rounded up to a
// millisecond, "until reset" for [Forever]) or `forced-open (until
// released): maintenance`.
func (s Snapshot) String() string {
	var b strings.Builder
	if s.Name != "" {
		fmt.Fprintf(&b, "%q: ", s.Name)
	}
	b.WriteString(s.State.String())
	switch s.State {
	case Closed:
		c := s.Counters
		fmt.Fprintf(&b, ": %d consecutive failures; %d calls, %d failures, %d slow calls in the window",
			c.ConsecutiveFailures, c.Calls, c.Failures, c.SlowCalls)
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

// String describes the transition on one line, for logs, in the words of
// [OpenError.Error]: the name (if any), the states and the cause (if
// any), for example `"payments": closed > open: tripped by: connection
// refused` or `closed > forced-open: maintenance`.
func (t Transition) String() string {
	s := t.From.String() + " > " + t.To.String()
	if t.Name != "" {
		s = fmt.Sprintf("%q: %s", t.Name, s)
	}
	return s + causeText(t.To, t.Cause)
}
