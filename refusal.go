package rampart

import (
	"errors"
	"math"
	"time"
)

// ErrRefused is matched, with [errors.Is], by every error with which one of
// rampart's layers refuses a call without calling its inner service: an
// open circuit breaker, a rate or concurrency limit with no room, load
// shedding, a filter's [ErrRefused]-matching check. A refused call never
// reached the dependency, so a retry or hedging layer above gives back the
// budget it withdrew for it, and the limit's own error (with its
// [RetryAfter] hint, when it has one) says why and for how long.
var ErrRefused = errors.New("rampart: refused")

// ErrOpen is matched by every refusal of an open circuit breaker (package
// circuitbreaker's ErrOpen is this value), and by every other refusal that
// says the dependency itself is failing, such as a fleet-wide breaker's.
// Such a refusal also matches [ErrRefused]. A retry layer never retries
// it: no attempt can succeed before the breaker lets a probe through.
var ErrOpen = errors.New("rampart: circuit open")

// Forever is the longest [time.Duration], math.MaxInt64 nanoseconds (the
// value of rate.InfDuration): as a wait hint ([Hint.RetryAfter]) it says
// the wait never ends, so no later attempt can succeed by waiting; as a
// circuit breaker's cool-down it keeps a tripped breaker open until it is
// reset.
const Forever time.Duration = math.MaxInt64

// Hint is implemented by an error that says how long the caller should
// wait before trying again, as an HTTP Retry-After header or a gRPC
// pushback does: a rate limit's refusal (the time until its next token),
// an open breaker's (the rest of its cool-down). RetryAfter returns the
// wait, never negative; zero means no hint, [Forever] that waiting cannot
// help. Layers find a hint anywhere in an error's chain with
// [RetryAfter], so a producer need not be imported to be understood (as
// net.Error lets any package ask Timeout).
type Hint interface {
	error
	RetryAfter() time.Duration
}

// RetryAfter returns the wait of the first [Hint] in err's chain
// ([errors.As]), and whether there is one.
func RetryAfter(err error) (time.Duration, bool) {
	if h, ok := errors.AsType[Hint](err); ok {
		return max(h.RetryAfter(), 0), true
	}
	return 0, false
}
