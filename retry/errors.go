package retry

import (
	"errors"
	"fmt"
	"strings"
)

// ErrExhausted is matched with [errors.Is] by every [*ExhaustedError]: the
// retry loop stopped while the last attempt was still failing. Which reason
// stopped it is matched separately: [ErrMaxAttempts], [ErrBudgetExhausted],
// [ErrDeadline], or the caller's context error.
var ErrExhausted = errors.New("retry: exhausted")

// Reasons an [*ExhaustedError] gives for stopping. Each is matched with
// [errors.Is] on the ExhaustedError, alongside the last attempt's error.
var (
	// ErrMaxAttempts: Config.MaxAttempts attempts ran and all failed.
	ErrMaxAttempts = errors.New("retry: max attempts reached")
	// ErrBudgetExhausted: a retry was due but the retry budget refused the
	// withdrawal.
	ErrBudgetExhausted = errors.New("retry: budget exhausted")
	// ErrDeadline: the next attempt could not start before the context's
	// deadline, because the backoff delay or the server's hint would end at
	// or after it. The deadline had not yet passed, so the error
	// does not match [context.DeadlineExceeded].
	ErrDeadline = errors.New("retry: next attempt would start after the deadline")
	// ErrHintForever: the last attempt carried a server's hint that the
	// wait never ends, [rampart.Forever] (the value of rate.InfDuration
	// from a rate limiter that can never grant, and of a breaker's hint
	// while it is held open until reset), so no later attempt could
	// succeed.
	ErrHintForever = errors.New("retry: the server's hint says the wait never ends")
	// ErrUpstreamRetry: the call's context says its request is already a
	// retry at the hop that sent it ([rampart.AttemptOf] above 1), so that
	// hop owns its retries and this one makes a single attempt; see
	// [NewLayer].
	ErrUpstreamRetry = errors.New("retry: the request is already a retry upstream")
)

// ExhaustedError is returned when the retry loop stops while the last
// attempt is still failing. It reports how many attempts ran, the last
// attempt's error, and why the loop stopped.
//
// errors.Is matches [ErrExhausted], the Reason, and anything the last error
// matches: the real failure is never replaced by the reason. The Reason is
// one of [ErrMaxAttempts], [ErrBudgetExhausted], [ErrDeadline], or, when the
// caller's context ended, the context's error (context.Canceled or
// context.DeadlineExceeded), wrapped together with its cause if
// [context.WithCancelCause] or similar gave one. errors.As finds typed
// errors in both chains.
//
// Its methods accept a nil *ExhaustedError: Error is "<nil>" (as for a
// nil [*net.OpError]), Unwrap nil, Timeout false.
type ExhaustedError struct {
	// Attempts is the number of calls made, including the first. At least 1.
	Attempts int
	// Err is the last attempt's error. Never nil.
	Err error
	// Reason says why the loop stopped. Never nil.
	Reason error
}

// Error describes the stop, the reason without its "retry: " prefix and
// the last error, each once, for example
// "retry: gave up after 3 attempts (max attempts reached): connection reset".
func (e *ExhaustedError) Error() string {
	if e == nil {
		return "<nil>"
	}
	plural := "s"
	if e.Attempts == 1 {
		plural = ""
	}
	if e.Reason == nil {
		return fmt.Sprintf("retry: gave up after %d attempt%s: %v", e.Attempts, plural, e.Err)
	}
	reason, _ := strings.CutPrefix(e.Reason.Error(), "retry: ")
	return fmt.Sprintf("retry: gave up after %d attempt%s (%s): %v", e.Attempts, plural, reason, e.Err)
}

// Unwrap returns the last error and the reason, so [errors.Is] and
// [errors.As] search both.
func (e *ExhaustedError) Unwrap() []error {
	if e == nil {
		return nil
	}
	return []error{e.Err, e.Reason}
}

// Is reports whether target is [ErrExhausted].
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }

// Timeout reports whether the loop gave up on a timeout: the last error is
// one, or the caller's deadline ended the loop (Reason matches
// [context.DeadlineExceeded]). An error is a timeout when the first error
// in its chain that has a Timeout() bool method, as [net.Error] and
// context.DeadlineExceeded do, returns true. So [os.IsTimeout], and the
// Timeout method of a *url.Error or net.Error that wraps e, see through
// the retries. [ErrDeadline] alone is not a timeout: the deadline had not
// yet passed.
func (e *ExhaustedError) Timeout() bool {
	return e != nil && (isTimeout(e.Err) || isTimeout(e.Reason))
}

// isTimeout reports whether the first error in err's chain with a Timeout
// method says it is a timeout.
func isTimeout(err error) bool {
	t, ok := errors.AsType[interface {
		error
		Timeout() bool
	}](err)
	return ok && t.Timeout()
}

// PermanentError marks an error that must not be retried. Create it
// with [Permanent]. It unwraps to the marked error, and its message is that
// error's message. The retry layer returns it as the service returned it.
// Its methods accept a nil *PermanentError: Error is "<nil>", Unwrap nil,
// Timeout false.
type PermanentError struct {
	// Err is the marked error.
	Err error
}

// Permanent marks err as not worth retrying: the retry layer returns it at
// once whatever the Retryable predicate says. The marker may be wrapped
// further; the layer finds it with [errors.As]. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// Error returns the marked error's message, or "retry: permanent: <nil>"
// for a PermanentError without one (Permanent never makes such a value).
func (e *PermanentError) Error() string {
	if e == nil {
		return "<nil>"
	}
	if e.Err == nil {
		return "retry: permanent: <nil>"
	}
	return e.Err.Error()
}

// Unwrap returns the marked error.
func (e *PermanentError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Timeout reports whether the marked error is a timeout, as
// [ExhaustedError.Timeout] decides it, so marking an error permanent does
// not hide a timeout from [os.IsTimeout] or a *url.Error.
func (e *PermanentError) Timeout() bool { return e != nil && isTimeout(e.Err) }
