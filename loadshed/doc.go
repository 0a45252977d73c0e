// Package loadshed refuses work early, at once, when accepting it would only
// make an overload worse. It offers two layers, both refusing with
// [ErrOverloaded]:
//
//   - [NewLayer] sheds a call when a resource it is given (a concurrency
//     limit, a queue) says it is not ready, instead of letting the call
//     queue. This is Tower's load_shed layer: there a service reports
//     readiness through poll_ready and load_shed fails requests that would
//     have to wait for it. Go services have no poll_ready, so the resource
//     is passed explicitly as a [Readiness]; *concurrency.Limiter is one.
//   - [NewThrottleLayer] is client-side adaptive throttling as described in
//     the Google SRE book, chapter 21 "Handling Overload": each client
//     tracks, over the last couple of minutes, how many requests it made
//     and how many the backend accepted, and once requests exceed K times
//     accepts it refuses new requests locally with a probability that grows
//     with the gap. See [Throttle].
//
// # Why
//
// Under overload, a request that waits in a queue usually waits until its
// caller has given up, and then the server does the work for nobody; the
// queue turns a brief spike into a long outage. Refusing at once keeps
// latency bounded for the requests that are served and tells callers
// quickly to go elsewhere or back off. On the client side, a backend that
// is rejecting most requests still pays to receive and reject each one;
// throttling locally, in proportion to how much the backend is rejecting,
// takes that load off it while still letting enough requests through to
// notice recovery.
//
// # Order
//
// Shedding goes outside the resource it watches, and adaptive throttling
// outside retries, so that retries of a rejected request also count:
//
//	svc := rampart.NewBuilder[Req, Resp]().
//		Layer(throttleLayer). // refuse locally when the backend rejects most requests
//		Layer(retryLayer).
//		Layer(shedLayer).     // refuse when lim has no free slot...
//		Layer(limitLayer).    // ...instead of waiting here
//		Service(backend)
package loadshed
