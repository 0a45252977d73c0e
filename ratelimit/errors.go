package ratelimit

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
)

// ErrLimited is the sentinel that every refusal by a ratelimit layer
// matches with [errors.Is], as it matches [rampart.ErrRefused]: no token
// was free now ([Refuse] mode) or before the context's deadline ([Wait]
// mode). The inner service was not called. The refusal is returned as a
// [*LimitedError], which carries the details.
var ErrLimited = errors.New("ratelimit: limited")

// LimitedError is the error a ratelimit layer returns when it refuses a
// call. It matches [ErrLimited] and [rampart.ErrRefused] with [errors.Is],
// and is a [rampart.Hint]: RetryAfter says how long until a token is due.
// It has the methods and fields of concurrency.LimitedError, so code that
// handles one handles the other, and [errors.Is] with either package's
// ErrLimited tells them apart. Its methods accept a nil *LimitedError:
// Error is "<nil>", RetryAfter 0.
type LimitedError struct {
	// Wait is how long from the refusal until the limiter would
	// have a token for this call, given the tokens already promised to waiting
	// calls. It is never negative. It is rate.InfDuration ([rampart.Forever])
	// when the limiter can never grant a token (a burst of 0, or a limit of 0
	// with the burst spent); the refusal is then at once in either mode, with
	// PastDeadline false. Layers that honour a hint find it with
	// [rampart.RetryAfter] (retry's server hints, the adapters' Retry-After
	// header and gRPC pushback).
	Wait time.Duration
	// PastDeadline is true when the layer was in [Wait] mode and refused
	// because the token would arrive at or after the context's deadline, so
	// waiting could only end in a timeout. It is false in [Refuse] mode.
	PastDeadline bool
}

// Error says how long until a token is free (or that none ever will be)
// and, in Wait mode, that the wait would pass the deadline.
func (e *LimitedError) Error() string {
	if e == nil {
		return "<nil>"
	}
	if e.Wait == rate.InfDuration {
		return "ratelimit: limited: the limiter can never grant a token"
	}
	if e.PastDeadline {
		return fmt.Sprintf("ratelimit: limited: next token in %v, at or past the context deadline", e.Wait)
	}
	return fmt.Sprintf("ratelimit: limited (retry after %v)", e.Wait)
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
