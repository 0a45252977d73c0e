package circuitbreaker

import (
	"errors"
	"fmt"
	"time"
)

// ErrOpen is the sentinel that every rejection by a [Breaker] matches with
// [errors.Is]: the breaker is Open, or HalfOpen with all its probe slots
// taken, and the call was not made. The rejection is an [*OpenError].
var ErrOpen = errors.New("circuitbreaker: open")

// ErrBadResponse is the cause of a trip or re-open on a call that returned
// no error but whose response the classifier of [NewClassifiedLayer]
// judged a failure (an HTTP 503).
var ErrBadResponse = errors.New("circuitbreaker: response judged a failure")

// ErrSlowCalls is the cause of a trip or re-open that [SlowCalls] decided
// on a call that succeeded, too slowly. A slow call that failed is
// reported with its own error.
var ErrSlowCalls = errors.New("circuitbreaker: slow calls")

// OpenError is the error a [Breaker] returns when it rejects a call. It
// matches [ErrOpen] and unwraps to Cause, so that [errors.Is] and
// [errors.As] also find the failure that tripped the breaker: a caller
// whose last attempt met an open breaker still sees why.
//
// A rejection therefore also matches what its cause matches (one tripped
// by timeouts matches [context.DeadlineExceeded]): code that decides from
// an error whether the call was made should ask errors.Is(err, ErrOpen)
// first, as [Classify] does.
//
// The breaker builds one OpenError when it opens and returns it for every
// rejection of that period, so that rejecting reads no clock and allocates
// nothing: treat it as read-only. How long to wait is computed when asked,
// by [OpenError.RetryAfter].
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
}

// RetryAfter returns how long from now until the breaker admits a probe:
// the rest of the cool-down, exact, read from the breaker's clock when
// called, so that rejecting needs no clock read. It is zero once the
// cool-down has ended and when the rejection was for want of a free probe
// slot in HalfOpen, and [Forever] when the breaker will not admit a probe
// by itself (forced open, or a Forever cool-down); never negative. The
// zero OpenError returns zero.
func (e *OpenError) RetryAfter() time.Duration {
	if e.b == nil {
		return e.wait
	}
	return max(0, time.Duration(e.until-e.b.mono()))
}

// Error describes the rejection, with the remaining cool-down (rounded up
// to a millisecond) and the cause.
func (e *OpenError) Error() string {
	const ms = time.Millisecond
	wait := "half-open, every probe slot taken"
	switch r := e.RetryAfter(); {
	case r == Forever:
		wait = "until reset or released"
	case e.b != nil && r > Forever-ms:
		wait = "retry after " + r.String()
	case e.b != nil:
		wait = "retry after " + ((r + ms - 1) / ms * ms).String()
	}
	if e.Cause == nil {
		return fmt.Sprintf("%sopen (%s)", prefix(e.Name), wait)
	}
	return fmt.Sprintf("%sopen (%s): tripped by: %v", prefix(e.Name), wait, e.Cause)
}

// prefix starts a message about the breaker named name.
func prefix(name string) string {
	if name == "" {
		return "circuitbreaker: "
	}
	return fmt.Sprintf("circuitbreaker %q: ", name)
}

// RetryDelay returns [OpenError.RetryAfter], for layers that honour a
// wait hint (retry, ramparthttp's Retry-After).
func (e *OpenError) RetryDelay() time.Duration { return e.RetryAfter() }

// Is reports whether target is [ErrOpen].
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Unwrap returns Cause (nil when there is none), for [errors.Is] and
// [errors.As].
func (e *OpenError) Unwrap() error { return e.Cause }
