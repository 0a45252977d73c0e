// Package timeout bounds how long a call may take, as Tower's Timeout and
// Finagle's TimeoutFilter do.
//
// # Quick start
//
//	l, err := timeout.NewLayer(timeout.Config[Req, Resp]{Timeout: time.Second})
//	if err != nil {
//		return err // names the bad value
//	}
//	svc := l.Wrap(backend)
//	resp, err := svc.Call(ctx, req) // err matches ErrTimeout and context.DeadlineExceeded after 1s
//
// The same [Config] sets per-request timeouts ([Config.For]), abandons
// calls that ignore their context ([Config.Abandon]) and keeps a response
// readable after the call returns ([Config.Detach]). Pass the layer to a
// [rampart.Builder] to stack it with others.
//
// # Why
//
// A dependency that has stopped answering is worse than one that fails: every
// caller waits, holds its resources (a goroutine, a connection, a slot in a
// concurrency limit) and eventually times out on its own, much later than it
// should have. A timeout layer turns "no answer" into a prompt, ordinary
// failure that the rest of the stack can act on: a circuit breaker counts it
// as a failure (the error matches [context.DeadlineExceeded], which
// circuitbreaker's default classification treats as one), a retry layer may
// try again within its budget, and the caller gets an answer in time.
//
// The deadline travels in the context, as Go's standard library expects, so
// an inner service that honours its context stops work at the deadline. By
// default the inner call runs on the caller's goroutine and no goroutine
// outlives a call. A call that ignores its context can only be cut short by
// abandoning it to its own goroutine, which Config.Abandon opts into.
//
// # Whose deadline?
//
// The caller's own deadline or cancellation is reported as the caller's
// (context.DeadlineExceeded or context.Canceled, as the caller's context
// says), not as a timeout of this layer: a breaker or retry layer outside
// may treat "the caller gave up" differently from "the dependency was too
// slow". [NewLayer] documents the exact rule, including a deadline
// that fires just as the inner call returns.
//
// # Order
//
// Where the layer sits decides what it bounds: outside a retry layer it
// bounds all attempts together, inside the breaker it bounds each attempt
// and makes a slow attempt a failure the breaker counts. A stack often has
// both; the [rampart] package documentation gives the full order.
//
// # Cost
//
// A deadline in a context costs what [context.WithDeadlineCause] costs: a
// timer context and a timer, allocated per call. That cost is inherent, and
// the layer adds no allocation of its own in its default mode
// (BenchmarkTimeoutLayer against BenchmarkBareWithTimeoutCause). Abandon
// mode adds a goroutine and a small record per call.
package timeout
