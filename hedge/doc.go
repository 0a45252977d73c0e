// Package hedge sends a second copy of a slow request and takes whichever
// answer comes first: a hedged request, after Dean and Barroso, "The Tail at
// Scale" (Communications of the ACM 56(2), 2013), and Tower's hedge
// middleware.
//
// # Quick start
//
//	hb := new(budget.Budget) // bounds hedges to a share of traffic
//	l, err := hedge.NewLayer(hedge.Config[Req, Resp]{
//		Hedgeable:  func(req Req) bool { return req.IsRead() }, // safe to send twice
//		Budget:     hb,
//		Quantile: 0.95, // hedge once an attempt is slower than the recent p95
//	})
//	if err != nil {
//		return err // names the bad field
//	}
//	svc := l.Wrap(backend)
//
// For HTTP clients,
// ramparthttp.HedgeLayer fills in what this package leaves to the caller:
// which requests may be sent twice, a body of its own for each copy, which
// statuses are answers, and closing the bodies of the responses that lose.
//
// # Why hedging
//
// In a fleet of servers a few requests are slow for reasons that have
// nothing to do with the request: a garbage collection, a full queue, a
// noisy neighbour. Those few set the tail latency a caller sees. Waiting a
// little (say the 95th percentile of recent latency) and then sending the
// same request again, usually to another replica, cuts the tail sharply:
// the second copy rarely meets the same hiccup. Whichever attempt first
// returns an acceptable answer wins; the others are cancelled. What is
// acceptable is [Config.Accept]'s to say: by default a nil error, and for
// HTTP a status that is not a failure, so a fast 503 from a sick replica
// does not beat a slower 200 from a healthy one.
//
// # Why hedging must be bounded
//
// Every hedge is extra load. When a dependency slows down because it is
// overloaded, every request becomes "slow" and is hedged, so the dependency
// receives up to MaxAttempts times its normal load exactly when it can
// least afford it. So every hedge withdraws from a [Budget], into which
// every hedgeable request deposits: a retry budget (package
// [github.com/rampart-go/rampart/budget]) holds hedges to a fraction of
// recent traffic. An empty budget stops new hedges; it never cancels a
// hedge already sent. Waiting for a high percentile keeps hedges few in the
// first place: with the 95th percentile, about 5% of requests are hedged
// while the dependency is healthy, because the attempts that hedging cuts
// short still count as slow when the percentile is learned (see
// [Config.Quantile]).
//
// Hedging is only correct for requests that may safely run more than once
// (reads, idempotent writes), so it is opt-in per request: [Config.Hedgeable]
// is required and decides for each request.
//
// # Order
//
// Hedge inside a timeout that bounds the whole call and outside the
// per-attempt layers (a circuit breaker, a per-attempt timeout), so that
// each hedge is an attempt of its own; the canonical full stack is in the
// package documentation of [github.com/rampart-go/rampart]. A loser that
// the hedge layer cancels ends with [context.Canceled], which a circuit
// breaker's default classification ignores: hedging never trips a breaker
// by itself.
//
// # Goroutines and cost
//
// The first attempt runs on the caller's goroutine; each hedge runs on a
// goroutine of its own, started by a timer. Call returns only after every
// attempt it started has returned, so no goroutine outlives a call:
// cancelled losers are waited for, which takes as long as the inner service
// takes to notice its cancelled context. A panic on a hedge's goroutine is
// recovered there and raised again on the caller's, as a
// [*rampart.PanicError], once every attempt has returned (see [NewLayer]),
// so hedging never turns a panic the caller could recover into one that
// ends the program. A non-hedgeable request costs one
// predicate call and nothing else. A hedgeable request answered before the
// delay allocates a cancelable context, a timer and one record of the call;
// each hedge adds a context and a goroutine. A learned delay adds two
// monotonic clock readings and two atomic operations per attempt, and a
// sort of the window every Window/16 recordings.
package hedge
