// Package loadshed refuses work early, at once, when accepting it would only
// make an overload worse.
//
// # Quick start
//
//	throttle, err := loadshed.NewThrottle(loadshed.ThrottleConfig{}) // the SRE book's defaults
//	if err != nil {
//		return err
//	}
//	l, err := loadshed.NewThrottleLayer[Req, Resp](throttle, nil) // nil: a nil error is an accept
//	if err != nil {
//		return err
//	}
//	svc := l.Wrap(backend)
//
// It offers two layers, both refusing with [ErrOverloaded]:
//
//   - [NewLayer] sheds a call when a resource they are given (a
//     concurrency limit, a queue) says it is not ready, instead of letting
//     the call queue. This is Tower's load_shed layer: there a service
//     reports readiness through poll_ready and load_shed fails requests
//     that would have to wait for it. Go services have no poll_ready, so
//     the resource is passed explicitly as a [Readiness];
//     *concurrency.Limiter is one.
//   - [NewThrottleLayer] is client-side adaptive
//     throttling as described in the Google SRE book, chapter 21
//     "Handling Overload": each client tracks, over the last couple of
//     minutes, how many requests it made and how many the backend
//     accepted, and once requests exceed K times accepts it refuses new
//     requests locally with a probability that grows with the gap. See
//     [Throttle], made by [NewThrottle].
//
// # Why
//
// Under overload, a request that waits in a queue usually waits until its
// caller has given up, and then the server does the work for nobody; the
// queue turns a brief spike into a long outage. Refusing at once keeps
// latency bounded for the requests that are served and tells callers
// quickly to go elsewhere or back off. On the client side, a backend that
// is refusing most requests still pays to receive and refuse each one;
// throttling locally, in proportion to how much the backend is refusing,
// takes that load off it while still letting enough requests through to
// notice recovery.
//
// # Order
//
// Shedding goes just outside the resource it watches (a concurrency limit
// in Wait mode, given the same Limiter), and adaptive throttling outside
// retries, so that retries of a refused request also count. The [rampart]
// package documentation gives the full order.
package loadshed
