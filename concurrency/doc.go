// Package concurrency bounds how many calls run at once through the
// services it guards: a concurrency limit, after Tower's ConcurrencyLimit
// and built on golang.org/x/sync/semaphore. Package ratelimit bounds how
// often calls start; this package bounds how many are in flight.
//
// # Quick start
//
//	lim, err := concurrency.New(10) // at most 10 calls at once
//	if err != nil {
//		return err
//	}
//	l, err := concurrency.NewLayer[Req, Resp](concurrency.Config{Limiter: lim, Mode: concurrency.Wait})
//	if err != nil {
//		return err
//	}
//	svc := l.Wrap(backend) // or pass l to a rampart.Builder
//
// A [*Limiter] is also usable on its own, as semaphore.Weighted is:
//
//	if err := lim.Acquire(ctx); err != nil {
//		return err // ctx ended while waiting
//	}
//	defer lim.Release()
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
// (bounded by their context, [Wait]) or are refused at once ([Reject]). The
// [Mode] is the one package ratelimit uses, and a refusal is a
// [*LimitedError] of the same shape as ratelimit's.
//
// A Limiter is shared state: one Limiter passed to several layers bounds
// their calls together, so the limit describes the dependency, not one
// service. Its [Limiter.Ready] method lets package loadshed refuse work
// before it queues (Tower's load_shed idea).
//
// # Adaptive limit
//
// Nobody knows the right fixed number: too high and a slow dependency's
// queue grows until calls time out, too low and capacity is wasted. An
// [*AdaptiveLimiter] finds the number by itself from the calls' latency,
// with TCP Vegas's estimator as Netflix's concurrency-limits applies it:
// when calls take longer than the dependency's unloaded latency, some of
// them are queueing there, and the limit comes down to what the dependency
// serves; when they do not, it goes up.
//
//	lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{
//		MinLimit: 2, MaxLimit: 200, Window: time.Second,
//	})
//	if err != nil {
//		return err
//	}
//	svc, err := concurrency.NewLayer[Req, Resp](concurrency.Config{Limiter: lim, Mode: concurrency.Reject})
//
// [NewLayer] takes either limiter (both are [Slots]), with the
// same modes and refusals; in a server, put it in the handler's layers to
// protect the service itself. Used directly, an AdaptiveLimiter hands out
// a [Permit] to give back:
//
//	p, err := lim.Acquire(ctx)
//	if err != nil {
//		return err
//	}
//	defer lim.Release(p)
//
// # Order
//
// Put the limit inside the timeout, so the time spent waiting for a slot
// counts against the caller's deadline, inside retries, so each attempt
// takes and returns its own slot, and outside the circuit breaker, so a
// refusal is not counted as a failure of the dependency. The [rampart]
// package documentation gives the full order.
package concurrency
