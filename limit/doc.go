// Package limit bounds how many calls run at once through the services it
// guards: a concurrency limit, after Tower's ConcurrencyLimit and built on
// golang.org/x/sync/semaphore.
//
// # Why
//
// A rate limit bounds how often calls start; it does not bound how many are
// in flight. When a dependency slows down, calls started at a steady rate
// pile up: each holds a goroutine, a connection and memory, and the extra
// concurrent load slows the dependency further. Little's law (in-flight =
// arrival rate × latency) says the pile grows exactly as fast as latency
// does. A concurrency limit caps the pile directly, so a slow dependency
// costs bounded resources, and callers beyond the cap either wait their turn
// (bounded by their context) or are refused at once.
//
// A [*Limiter] is shared state: one Limiter passed to several layers bounds
// their calls together, so the limit describes the dependency, not one
// service. Its [Limiter.Ready] method lets package loadshed refuse work
// before it queues (Tower's load_shed idea).
//
// # Order
//
// Put the limit inside the timeout so the time spent waiting for a slot
// counts against the caller's deadline, and inside retries so each attempt
// takes and returns its own slot:
//
//	svc := rampart.NewBuilder[Req, Resp]().
//		Layer(timeoutLayer).   // bounds waiting for a slot and the call
//		Layer(retryLayer).     // each attempt takes a slot
//		Layer(limitLayer).     // at most Max calls in flight
//		Service(backend)
package limit
