package timeout

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTimeout is the sentinel that every timeout reported by this package
// matches with [errors.Is]. The layer never returns ErrTimeout itself: it
// returns an [*Error], which matches both ErrTimeout and
// [context.DeadlineExceeded].
var ErrTimeout = errors.New("timeout: deadline exceeded")

// Error is the error the timeout layer returns when its own deadline, not the
// caller's, ended the call. It matches [ErrTimeout] and
// [context.DeadlineExceeded] with [errors.Is], so code that treats a
// deadline as a failure (a circuit breaker's default classification)
// counts it without knowing this package.
//
// An *Error with a nil Err is also the cause ([context.Cause]) of the
// context the layer gives the inner call once the layer's deadline has
// passed; treat that value as read-only, it is shared by calls.
//
// Its methods accept a nil *Error: Error is "<nil>" (as for a nil
// [*net.OpError]), Unwrap nil; Is, Timeout and Temporary answer as for
// any *Error.
type Error struct {
	// After is the deadline the layer gave the call, measured from when
	// the layer's Call began.
	After time.Duration
	// Err is the error the inner call returned after the deadline passed
	// (usually context.DeadlineExceeded). It is nil when the layer
	// abandoned the call before it returned.
	Err error
}

// Error describes the timeout and, when there is one, the inner error.
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	if e.Err == nil {
		return fmt.Sprintf("timeout: deadline of %v exceeded", e.After)
	}
	return fmt.Sprintf("timeout: deadline of %v exceeded: %v", e.After, e.Err)
}

// Is reports whether target is [ErrTimeout] or [context.DeadlineExceeded].
func (e *Error) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// Unwrap returns Err, so [errors.Is] and [errors.As] also find the inner
// error.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Timeout reports true: an *Error is a timeout to code that asks the
// net/http way, [os.IsTimeout], a [net.Error]'s Timeout method, or
// [net/url.Error.Timeout] around an HTTP client's error, as it is for
// [http.Client.Timeout] and [context.DeadlineExceeded].
func (e *Error) Timeout() bool { return true }

// Temporary reports true, as [context.DeadlineExceeded] does, so that an
// *Error satisfies [net.Error]. The method is deprecated in net.Error.
func (e *Error) Temporary() bool { return true }
