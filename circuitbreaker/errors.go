package circuitbreaker

import (
	"errors"
	"fmt"
	"time"
)

// ErrOpen is the sentinel that every rejection by a [Breaker] matches with
// [errors.Is]: the breaker is Open, or HalfOpen with all its probe slots
// taken. The protected call was not made. The rejection is returned as an
// [*OpenError], which carries the details.
var ErrOpen = errors.New("circuitbreaker: open")

// ErrBadResponse is the cause of a trip or a re-open on a call that
// returned no error but whose response the classifier of
// [NewClassifiedLayer] judged a failure (an HTTP 503): there is no error to
// report, so [OpenError.Cause] and [Transition.Cause] are ErrBadResponse.
var ErrBadResponse = errors.New("circuitbreaker: response judged a failure")

// ErrSlowCalls is the cause of a trip or a re-open that [SlowCalls]
// decided on a call that succeeded, too slowly: there is no failing error
// to report, so [OpenError.Cause] and [Transition.Cause] are ErrSlowCalls
// (match it with [errors.Is]). A slow call that failed is reported with its
// own error.
var ErrSlowCalls = errors.New("circuitbreaker: slow calls")

// OpenError is the error a [Breaker] returns when it rejects a call. It
// matches [ErrOpen] with [errors.Is], and unwraps to Cause, so that
// [errors.Is] and [errors.As] also find the failure that tripped the
// breaker: a caller whose last attempt met an open breaker still sees why
// (an HTTP 500, a timeout), not only that the breaker was open.
//
// Since a rejection's chain holds its cause, a rejection also matches what
// its cause matches: one tripped by timeouts matches
// [context.DeadlineExceeded], one tripped by a dependency's own
// cancellation matches [context.Canceled]. Code that decides from an error
// whether the call was made (to retry it, to count it, to pick a status)
// should ask errors.Is(err, ErrOpen) first. [Classify] does: it judges a
// rejection a failure whatever its cause.
//
// A Breaker may return the same *OpenError to every caller it rejects within
// one millisecond of one Open period, so that rejecting allocates nothing:
// treat it as read-only.
type OpenError struct {
	// Name is the Name of the breaker's [Config], empty if none.
	Name string
	// RetryAfter is how long until the breaker admits a probe: the rest of
	// the cool-down, rounded up to a whole millisecond, so that a caller
	// who waits RetryAfter finds the cool-down over. It is zero when the
	// breaker rejected the call because every probe slot was taken in
	// HalfOpen, [Forever] when the breaker will not admit a probe by itself
	// (forced open by a [Switch], or a Forever cool-down), and negative
	// never.
	RetryAfter time.Duration
	// Cause is the failure that tripped the breaker ([ErrSlowCalls] for a
	// trip on slow calls that succeeded, [ErrBadResponse] for a failure
	// judged from a response without an error), or, for a manual force
	// open, the reason given (nil if none).
	Cause error
}

// Error describes the rejection, with the remaining cool-down and the cause.
func (e *OpenError) Error() string {
	wait := "retry after " + durationString(e.RetryAfter)
	switch e.RetryAfter {
	case Forever:
		wait = "until reset or released"
	case 0:
		wait = "half-open, every probe slot taken"
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

// RetryDelay returns RetryAfter. Layers that honour a producer's hint look
// for this method (retry's server hints, ramparthttp's Retry-After header),
// so every rampart error that asks the caller to wait implements it.
func (e *OpenError) RetryDelay() time.Duration { return e.RetryAfter }

// Is reports whether target is [ErrOpen].
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Unwrap returns Cause (nil when there is none), for [errors.Is] and
// [errors.As].
func (e *OpenError) Unwrap() error { return e.Cause }
