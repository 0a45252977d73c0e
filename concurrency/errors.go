package concurrency

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrLimited is the sentinel that every refusal by a concurrency limit
// matches with [errors.Is]: no slot was free ([Reject] mode), the line of
// waiting calls was full ([AdaptiveConfig.MaxWaiting]), or the limiter has
// no slots at all (a zero [Limiter] or [AdaptiveLimiter]). The inner
// service was not called. The refusal is returned as a [*LimitedError].
var ErrLimited = errors.New("concurrency: limit reached")

// forever is the RetryAfter of a limiter that can never grant a slot: the
// largest time.Duration, the value of retry.Forever and rate.InfDuration,
// which a retry layer and an HTTP server take to mean "do not wait".
const forever time.Duration = math.MaxInt64

// LimitedError is the error a concurrency limit returns when it refuses a
// call. It matches [ErrLimited] with [errors.Is]. It has the fields and
// methods of ratelimit.LimitedError, so code that handles one handles the
// other, and [errors.Is] with either package's ErrLimited tells them apart.
type LimitedError struct {
	// RetryAfter is how long from the refusal until a slot is expected to
	// free, when that is known, and 0 when it is not. A [Limiter] never
	// knows, because a slot frees when a call returns, whenever that is,
	// so its refusals carry 0. An [AdaptiveLimiter] measures how long calls
	// take, and its refusals carry the average latency of its latest
	// window (by then the calls in flight have mostly finished), 0 before
	// its first window closes. A zero Limiter or AdaptiveLimiter has no
	// slots and never will, and says so with the largest time.Duration
	// (the value of retry.Forever and rate.InfDuration).
	RetryAfter time.Duration
	// PastDeadline is true when a call in [Wait] mode was refused because
	// the room it waits for would come at or after its context's deadline.
	// A concurrency limiter cannot foresee a wait, so its refusals never
	// set it.
	PastDeadline bool
}

// Error says that the limit was reached and, when known, how long until a
// slot frees.
func (e *LimitedError) Error() string {
	switch {
	case e.RetryAfter == forever:
		return "concurrency: limit reached: the limiter has no slots (a zero Limiter or AdaptiveLimiter; make one with New or NewAdaptive)"
	case e.PastDeadline:
		return fmt.Sprintf("concurrency: limit reached: next slot in %v, at or past the context deadline", e.RetryAfter)
	case e.RetryAfter > 0:
		return fmt.Sprintf("concurrency: limit reached (retry after %v)", e.RetryAfter)
	}
	return "concurrency: limit reached"
}

// RetryDelay returns RetryAfter. Layers that honour a producer's hint look
// for this method (retry's server hints, ramparthttp's Retry-After
// header); a zero delay is no hint.
func (e *LimitedError) RetryDelay() time.Duration { return e.RetryAfter }

// Is reports whether target is [ErrLimited].
func (e *LimitedError) Is(target error) bool { return target == ErrLimited }
