package circuitbreaker

import (
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
)

// ErrOpen is matched by every refusal (an [*OpenError]): the breaker was
// Open, or HalfOpen with every probe slot taken, and the call was not
// made. It is [rampart.ErrOpen], declared in the root package so that
// other layers (retry, hedge) can recognize a breaker's refusal without
// importing this package, as os.ErrNotExist is fs.ErrNotExist. Every
// refusal also matches [rampart.ErrRefused].
var ErrOpen = rampart.ErrOpen

// ErrBadResponse is the cause of a trip on a response judged a failure.
var ErrBadResponse = errors.New("circuitbreaker: response judged a failure")

// ErrSlowCalls is the cause of a trip [SlowCalls] decided on a slow success.
var ErrSlowCalls = errors.New("circuitbreaker: slow calls")

// OpenError is a [Breaker]'s refusal. It matches [ErrOpen] and unwraps
// to Cause (ask errors.Is(err, ErrOpen) first to learn whether the call
// was made). A period's refusals share one OpenError: treat it as
// read-only. Its methods accept a nil *OpenError: Error is "<nil>" (as
// for a nil [*net.OpError]), RetryAfter 0, Unwrap nil.
type OpenError struct {
	// Name is the breaker's [Config.Name].
	Name string
	// Cause is the failure that tripped the breaker, or the reason given
	// to [Switch.ForceOpen] (nil if none).
	Cause error

	// b is the breaker whose cool-down ends at until (on b's monotonic
	// clock), or nil when the wait does not change: it is then wait.
	b     *Breaker
	until int64
	wait  time.Duration
	// forced is set in the refusal of a breaker forced open.
	forced bool
}

// RetryAfter returns the exact rest of the cool-down, read from the
// breaker's clock when called: zero once it has ended, for want of a
// probe slot, and for the zero OpenError; [rampart.Forever] when no probe
// will be admitted by itself. It makes an OpenError a [rampart.Hint],
// which retry and the adapters honour.
func (e *OpenError) RetryAfter() time.Duration {
	if e == nil {
		return 0
	}
	if e.b == nil {
		return e.wait
	}
	return max(0, time.Duration(e.until-e.b.mono()))
}

// Error says why the breaker is open and until when, as in
// "open (retry after 1.5s): tripped by: <cause>" or
// "forced open (until released): <reason>".
func (e *OpenError) Error() string {
	if e == nil {
		return "<nil>"
	}
	if e.forced {
		return prefix(e.Name) + "forced open (until released)" + causeText(ForcedOpen, e.Cause)
	}
	wait := "half-open, every probe slot taken"
	if r := e.RetryAfter(); e.b != nil || r == rampart.Forever {
		wait = waitText(r)
	}
	return prefix(e.Name) + "open (" + wait + ")" + causeText(Open, e.Cause)
}

// waitText says when an Open breaker whose cool-down has r left admits a
// probe, as the messages print it: "retry after" r rounded up to a
// millisecond, or "until reset" for [rampart.Forever].
func waitText(r time.Duration) string {
	const ms = time.Millisecond
	switch {
	case r == rampart.Forever:
		return "until reset"
	case r > rampart.Forever-ms:
		return "retry after " + r.String()
	}
	return "retry after " + ((r + ms - 1) / ms * ms).String()
}

// causeText ends a message about a breaker in state s with its cause:
// ": tripped by: <cause>" for a trip, ": <reason>" for the reason given to
// a force open, nothing when cause is nil.
func causeText(s State, cause error) string {
	switch {
	case cause == nil:
		return ""
	case s == ForcedOpen:
		return ": " + cause.Error()
	}
	return ": tripped by: " + cause.Error()
}

// prefix starts a message about the breaker named name.
func prefix(name string) string {
	if name == "" {
		return "circuitbreaker: "
	}
	return fmt.Sprintf("circuitbreaker %q: ", name)
}

// Is reports whether target is [ErrOpen] or [rampart.ErrRefused].
func (e *OpenError) Is(target error) bool { return target == ErrOpen || target == rampart.ErrRefused }

// Unwrap returns Cause.
func (e *OpenError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Cause
}
