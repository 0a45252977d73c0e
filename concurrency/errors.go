package concurrency

import (
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
)

// ErrLimited is the sentinel that every refusal by a concurrency limit
// matches with [errors.Is], as it matches [rampart.ErrRefused]: no slot was free ([Refuse] mode), the line of
// waiting calls was full ([AdaptiveConfig.MaxWaiting]), or the limiter has
// no slots at all (a nil or zero [Limiter] or [AdaptiveLimiter]). The inner
// service was not called. The refusal is returned as a [*LimitedError].
var ErrLimited = errors.New("concurrency: limit reached")

// LimitedError is the error a concurrency limit returns when it refuses a
// call. It matches [ErrLimited] and [rampart.ErrRefused] with [errors.Is],
// and is a [rampart.Hint]. It has the methods and fields of
// ratelimit.LimitedError, so code that handles one handles the other, and
// [errors.Is] with either package's ErrLimited tells them apart. Its
// methods accept a nil *LimitedError: Error is "<nil>", RetryAfter 0.
type LimitedError struct {
	// Wait is how long from the refusal until a slot is expected
	// to free, when that is known, and 0 (no hint) when it is not. A [Limiter]
	// never knows, because a slot frees when a call returns, whenever that
	// is, so its refusals carry 0. An [AdaptiveLimiter] measures how long
	// calls take, and its refusals carry the average latency of its latest
	// window (by then the calls in flight have mostly finished), 0 before its
	// first window closes. A zero Limiter or AdaptiveLimiter has no slots and
	// never will, and says so with [rampart.Forever]. Layers that honour a
	// hint find it with [rampart.RetryAfter].
	Wait time.Duration
	// PastDeadline is true when a call in [Wait] mode was refused because
	// the room it waits for would come at or after its context's deadline.
	// A concurrency limiter cannot foresee a wait, so its refusals never
	// set it.
	PastDeadline bool
}

// Error says that the limit was reached and, when known, how long until a
// slot frees.
func (e *LimitedError) Error() string {
	if e == nil {
		return "<nil>"
	}
	switch {
	case e.Wait == rampart.Forever:
		return "concurrency: limit reached: the limiter has no slots (a nil or zero Limiter or AdaptiveLimiter; make one with New or NewAdaptive)"
	case e.PastDeadline:
		return fmt.Sprintf("concurrency: limit reached: next slot in %v, at or past the context deadline", e.Wait)
	case e.Wait > 0:
		return fmt.Sprintf("concurrency: limit reached (retry after %v)", e.Wait)
	}
	return "concurrency: limit reached"
}

// RetryAfter returns Wait, making the error a [rampart.Hint].
func (e *LimitedError) RetryAfter() time.Duration {
	if e == nil {
		return 0
	}
	return e.Wait
}

// Is reports whether target is [ErrLimited] or [rampart.ErrRefused].
func (e *LimitedError) Is(target error) bool {
	return target == ErrLimited || target == rampart.ErrRefused
}
