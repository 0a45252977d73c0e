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
// (bounded by their context, [Wait]) or are refused at once ([Refuse]). The
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
//	svc, err := concurrency.NewLayer[Req, Resp](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
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
// # Criticality
//
// Criticality, as [rampart.CriticalityOf] reads it from a call's context,
// decides which calls a limit refuses first, through the layer of
// [NewLayer] and through ReadyFor (which package loadshed asks). With L
// the limit (a [Limiter]'s Max, an [AdaptiveLimiter]'s current Limit):
//
//   - a default call (the zero criticality, every call unless someone set
//     one) is admitted exactly as without criticality: while fewer than L
//     calls hold slots;
//   - a sheddable call is admitted only while fewer than
//     max(1, L − ⌈L/4⌉) calls hold slots (three quarters of the limit), so
//     the last quarter is kept for the others; above that it is refused at
//     once, in Wait mode too (work worth shedding is not worth queueing);
//   - a critical call that finds the L slots taken may take one of a
//     reserve of L more slots (at least 1) beyond the limit, at once and
//     ahead of any call waiting; only when the reserve is taken too does
//     it wait (Wait mode) or get refused (Refuse mode) as a default call
//     would. A critical call that waits is not stuck behind default ones
//     while the reserve has room: it waits in a line of critical calls,
//     in arrival order, that gets each slot of the reserve given back
//     before any other waiting call; with an [AdaptiveLimiter] that line
//     gets every slot that frees below 2L first, with a [Limiter] it also
//     waits for an ordinary slot in its turn, whichever comes first. The
//     reserve is as large as the limit because default calls
//     alone may fill the L slots for as long as an overload lasts:
//     critical calls then have only the reserve, and it must carry them
//     all, so critical work is refused only when it alone would fill a
//     whole limit. With an adaptive limit the latency the reserve adds
//     brings L down, so the total stays near what the dependency serves;
//     with a fixed one, choose Max knowing that critical calls may
//     double it.
//
// So under overload sheddable work is refused first and critical work
// last, and a limit never holds more than 2L calls (2 when L is 1). The
// rule costs nothing while fewer than three quarters of the slots are
// held: the context is read only above that. The Acquire and TryAcquire
// methods used directly do not look at criticality.
//
// # Order
//
// Put the limit inside the timeout, so the time spent waiting for a slot
// counts against the caller's deadline, inside retries, so each attempt
// takes and returns its own slot, and outside the circuit breaker, so a
// refusal is not counted as a failure of the dependency. The [rampart]
// package documentation gives the full order.
package concurrency
