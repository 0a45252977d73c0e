// Package retry provides a layer that calls a service again when an attempt
// fails with a transient fault, waiting between attempts on a backoff
// schedule with jitter, and bounded by attempts, a retry budget and the
// caller's deadline.
//
// # Quick start
//
//	rb := new(budget.Budget) // one budget for every caller of the dependency
//	l, err := retry.NewLayer(retry.Config[Req, Resp]{Budget: rb})
//	if err != nil {
//		return err // names the bad field
//	}
//	resp, err := l.Wrap(backend).Call(ctx, req)
//
// With the zero Config, every error is retried, up to 3 attempts in all,
// after exponential backoff with full jitter from 100ms. Pass the layer to
// a [github.com/rampart-go/rampart.Builder], whose package documentation
// shows where retries go in a full stack.
//
// # Why budgets beat max-retries
//
// MaxAttempts alone is a dangerous bound. A healthy dependency sees almost
// no retries, but a failing one sees MaxAttempts times its normal load,
// exactly when it is weakest, and stacked retry layers multiply again
// (3 x 3 x 3 = 27 calls at the bottom). A retry budget (package
// [github.com/rampart-go/rampart/budget]) instead lets retries add at most
// a fixed share of recent traffic, 20% by default: when everything fails,
// load grows by 20%, not 200%; when few requests fail, each may still be
// retried. Use both: MaxAttempts bounds one request's latency, the budget
// bounds the fleet's load.
//
// # What is never retried
//
// An error matching [rampart.ErrOpen] (an open circuit breaker's refusal)
// ends the loop at once and is
// returned unwrapped: the breaker has already decided the dependency is
// down. So does an error marked with [Permanent], and any outcome once the
// caller's context is done; a call whose context is done before it starts
// makes no attempt at all. The loop never sleeps past the context's
// deadline: when the next wait would end at or after it, the loop returns
// the last error at once. A server's retry-after hint lengthens the next
// wait; a hint that the wait never ends ([rampart.Forever]) ends the loop at once.
//
// A retry budget pays only for retries that were sent: a retry withdrawn
// from it but not sent, because the caller's context ended during the wait
// or a circuit breaker refused it, is refunded (see [Refunder]).
//
// # Responses
//
// Config.Retryable sees responses too, so a response such as an HTTP 503
// can be retried like an error. A response that is about to be retried is
// passed to Config.Discard just before the next attempt (the HTTP adapter
// closes its body there); a response the layer returns is never discarded.
// When the loop stops on such a response (attempts, budget or time ran
// out), it returns that last response with a nil error: the caller sees the
// real result. When it stops on an error, it returns an [*ExhaustedError]
// that wraps the last error and says why it stopped; see [NewLayer].
//
// # Order
//
// Put the retry layer outside the circuit breaker, so that every attempt
// asks the breaker and an open breaker ends the loop, and a per-attempt
// timeout inside it. The canonical full stack is in the package
// documentation of [github.com/rampart-go/rampart].
package retry
