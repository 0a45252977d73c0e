// Package rampart composes request/response services out of small, reusable
// middleware layers, in the manner of Rust's Tower and Twitter's Finagle.
//
// # Quick start
//
//	var br circuitbreaker.Breaker // the zero Breaker has the default settings
//	svc, err := rampart.NewBuilder[Req, Resp]().
//		With(retry.NewLayer(retry.Config[Req, Resp]{Budget: new(budget.Budget)})).
//		Layer(circuitbreaker.NewLayer[Req, Resp](&br, nil)).
//		With(timeout.NewLayer(timeout.Config[Req, Resp]{Timeout: time.Second})).
//		Build(backend)
//	if err != nil {
//		return err // names the layer and the bad field
//	}
//	resp, err := svc.Call(ctx, req)
//
// A [Service] answers one request with one response or an error. A [Layer]
// wraps a Service in another Service that adds one behaviour: a circuit
// breaker, retries bounded by a retry budget, a timeout, a rate limit. A
// [Builder] stacks layers once, at construction, so a call through the stack
// costs only what each layer does.
//
// [Builder.With] takes a layer constructor's two results; [Builder.Build]
// returns the first error. To guard a plain function instead of a Service,
// make the request a [Func] and the service [Invoke].
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
// first and the response last. This is the order for a client of a remote
// dependency; every layer is optional, and the other packages refer here:
//
//	rampart.NewBuilder[Req, Resp]().
//		With(timeout.NewLayer(totalTimeout)).                // 1
//		With(loadshed.NewThrottleLayer[Req, Resp](th, nil)). // 2
//		With(retry.NewLayer(retryConfig)).                   // 3
//		With(hedge.NewLayer(hedgeConfig)).                   // 4
//		With(ratelimit.NewLayer[Req, Resp](rateConfig)).     // 5
//		With(loadshed.NewLayer[Req, Resp](shedConfig)).      // 6
//		With(concurrency.NewLayer[Req, Resp](slotsConfig)).  // 7
//		Layer(circuitbreaker.NewLayer[Req, Resp](br, nil)).  // 8
//		With(timeout.NewLayer(attemptTimeout)).              // 9
//		Build(backend)
//
// Why this order:
//
//  1. A total timeout bounds the whole call: every attempt, every backoff,
//     and the time spent waiting for tokens and slots.
//  2. Adaptive throttling sits outside retries, so that the retries of a
//     refused call count as requests too.
//  3. Retries, bounded by a budget. An open breaker below ends the loop at
//     once; a limit's refusal below tells it how long to wait.
//  4. Hedging sends a second copy of a slow attempt; each copy passes
//     through everything below.
//  5. A rate limit, inside retries so that each attempt takes its own
//     token, and outside the breaker so that a local refusal is not
//     counted as a failure of the dependency; the same holds for 6 and 7.
//  6. Shedding, just outside the concurrency limit whose readiness it
//     watches: a call is refused at once instead of queueing there.
//  7. A concurrency limit: each attempt holds a slot while it runs.
//  8. The breaker, consulted before each attempt.
//  9. A per-attempt timeout, innermost, so a slow attempt is a failure the
//     breaker counts.
//
// Constructors that validate a configuration return a layer and an error,
// for [Builder.With]; a layer over an already built value
// (circuitbreaker.NewLayer over a *circuitbreaker.Breaker) cannot fail and
// returns the layer alone, for [Builder.Layer].
//
// # Constructors
//
// Each behaviour has one constructor, NewLayer, or New<Kind>Layer when a
// package has a second behaviour (circuitbreaker.NewGroupLayer,
// loadshed.NewThrottleLayer), and a stateful value such as a
// *circuitbreaker.Breaker has a New of its own. A constructor takes the
// package's Config, or positionally the values that are its whole
// configuration (a breaker, a check function), and an optional part such as
// a classifier or a key function is a Config field or a parameter that may
// be nil, never a second function. To wrap one service without a Builder,
// call the layer's Wrap: l.Wrap(backend).
package rampart

import (
	"context"
	"fmt"
)

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
// concurrent use when f is. A nil ServiceFunc is a nil service: a
// [Builder] reports it, and its every call returns the zero Resp and an
// error matching [ErrNilService].
type ServiceFunc[Req, Resp any] func(ctx context.Context, req Req) (Resp, error)

// Call calls f(ctx, req), or fails with [ErrNilService] when f is nil.
func (f ServiceFunc[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if f == nil {
		var zero Resp
		return zero, errNilServiceFunc
	}
	return f(ctx, req)
}

// errNilServiceFunc is what every call of a nil ServiceFunc returns.
var errNilServiceFunc = fmt.Errorf("rampart: call of a nil ServiceFunc: %w", ErrNilService)

// Func is a request that is itself the work to do: a function that
// returns a T. With [Invoke] it lets a stack guard a plain function, so a
// caller need not declare a request type or a [Service]:
//
//	svc, err := rampart.NewBuilder[rampart.Func[User], User]().
//		With(retry.NewLayer(retry.Config[rampart.Func[User], User]{})).
//		Build(rampart.Invoke[User]())
//	...
//	user, err := svc.Call(ctx, func(ctx context.Context) (User, error) {
//		return db.LoadUser(ctx, id)
//	})
//
// The layers treat the function as they treat any request, so it must
// bear what they do with a request: a retry layer calls it again for each
// attempt, and a hedging layer calls it again while an earlier call is
// still running, on another goroutine. Such a function must be safe to
// call more than once, and concurrently when hedged. For a single circuit
// breaker, circuitbreaker.Run does the same without a stack.
type Func[T any] func(ctx context.Context) (T, error)

// Invoke returns the [Service] that answers a [Func] request by calling
// it: Call(ctx, fn) returns fn(ctx). Put it innermost in a stack of
// Func[T] requests. A nil fn fails with an error matching
// [ErrNilService]. The service is safe for concurrent use when the
// functions it is given are; it allocates nothing.
func Invoke[T any]() Service[Func[T], T] { return invoke[T]{} }

// invoke is the Service that Invoke returns.
type invoke[T any] struct{}

// Call returns fn(ctx).
func (invoke[T]) Call(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		var zero T
		return zero, errNilFunc
	}
	return fn(ctx)
}

// errNilFunc is the error of a call of Invoke's service with a nil Func.
var errNilFunc = fmt.Errorf("rampart: Invoke given a nil Func: %w", ErrNilService)
