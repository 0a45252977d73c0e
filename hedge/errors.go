package hedge

import (
	"errors"
	"fmt"
	"strings"
)

// AllFailedError is the error a hedged call returns when more than one
// attempt ran and every one failed with an error. (When only the original
// request ran, its response and error are returned unchanged; when some
// attempt returned a response that [Config.Accept] rejected with a nil
// error, that response is returned instead.) It unwraps to every
// attempt's error, so [errors.Is] and [errors.As] find any of them: when the
// caller's context ended, each attempt's error normally wraps the context's
// error, so errors.Is(err, context.Canceled) holds; and a server's
// retry-after hint (a [rampart.Hint]) carried by any attempt is still
// found by a retry layer outside. Its methods accept a nil
// *AllFailedError: Error is "<nil>" (as for a nil [*net.OpError]), Unwrap
// nil, Timeout false.
type AllFailedError struct {
	// Errs holds one error per attempt, in the order the attempts were
	// started: Errs[0] is the original request's. None is nil.
	Errs []error
}

// Error lists the attempts' errors in the order the attempts were started.
func (e *AllFailedError) Error() string {
	if e == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hedge: all %d attempts failed", len(e.Errs))
	for i, err := range e.Errs {
		fmt.Fprintf(&b, "; attempt %d: %v", i+1, err)
	}
	return b.String()
}

// Unwrap returns the attempts' errors, for [errors.Is] and [errors.As].
func (e *AllFailedError) Unwrap() []error {
	if e == nil {
		return nil
	}
	return e.Errs
}

// Timeout reports whether any attempt failed with a timeout, so
// [os.IsTimeout], and the Timeout method of a *url.Error or [net.Error]
// that wraps e, see a timeout through the hedges, as [errors.Is] finds
// context.DeadlineExceeded when any attempt's error matches it. An
// attempt's error is a timeout when the first error in its chain that has
// a Timeout() bool method, as net.Error and context.DeadlineExceeded do,
// returns true.
func (e *AllFailedError) Timeout() bool {
	if e == nil {
		return false
	}
	for _, err := range e.Errs {
		if t, ok := errors.AsType[interface {
			error
			Timeout() bool
		}](err); ok && t.Timeout() {
			return true
		}
	}
	return false
}
