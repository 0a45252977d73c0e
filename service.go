// Package rampart composes request/response services out of small, reusable
// middleware layers, in the manner of Rust's Tower and Twitter's Finagle.
//
// A [Service] answers one request with one response or an error. A [Layer]
// wraps a Service in another Service that adds one behaviour: a circuit
// breaker, retries bounded by a retry budget, a timeout, a rate limit. A
// [Builder] stacks layers once, at construction, so a call through the stack
// costs only what each layer does.
//
// # Why
//
// When a dependency goes down, naive clients retry every failure, so the
// dependency receives several times its normal load exactly when it can least
// afford it, and the outage lasts longer than the fault that caused it (a
// retry storm). rampart's flagship layers stop that: the circuit breaker
// (package circuitbreaker) stops calling a dependency that is failing and
// probes it carefully before letting traffic back; the retry layer (package
// retry) retries only within a budget (package budget) that is a fraction of
// recent successful traffic; the timeout layer (package timeout) bounds how
// long a caller waits.
//
// # Order
//
// The first layer added to a [Builder] is the outermost: it sees the request
// first and the response last.
//
//	total, err := timeout.NewLayer[Req, Resp](2 * time.Second)
//	if err != nil { ... }
//	retries, err := retry.NewLayer(retry.Config[Req, Resp]{Budget: rb})
//	if err != nil { ... }
//	svc := rampart.NewBuilder[Req, Resp]().
//		Layer(total).                                  // bounds the whole call
//		Layer(retries).                                // retries within the 2s
//		Layer(circuitbreaker.NewLayer[Req, Resp](br)). // consulted before each attempt
//		Service(backend)
//
// Here the timeout bounds all attempts together, the retry loop consults the
// breaker before each attempt, and an open breaker ends the retry loop at once.
// Constructors that validate a configuration return an error with the layer;
// a layer over an already built value (circuitbreaker.NewLayer over a
// *circuitbreaker.Breaker) cannot fail and returns the layer alone.
package rampart

import "context"

// Service is a function from a request to a response, in the style of
// Tower's Service and Finagle's Service.
//
// Call must be safe for concurrent use by multiple goroutines. It must honour
// ctx: when ctx is done, Call should return promptly with an error that
// wraps ctx.Err() or the context's cause. A non-nil error means the call
// failed; the Resp returned alongside a non-nil error may be a zero value or
// a partial response, as the implementation documents (ramparthttp, for
// example, never returns both). Call must not retain ctx after it returns.
type Service[Req, Resp any] interface {
	Call(ctx context.Context, req Req) (Resp, error)
}

// ServiceFunc adapts an ordinary function to a [Service], as
// [net/http.HandlerFunc] adapts a function to a Handler. It is safe for
// concurrent use when f is.
type ServiceFunc[Req, Resp any] func(ctx context.Context, req Req) (Resp, error)

// Call calls f(ctx, req).
func (f ServiceFunc[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	return f(ctx, req)
}
