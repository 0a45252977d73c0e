// Package circuitbreaker stops calling a dependency that is down.
//
// # Quick start
//
//	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "payments"})
//	if err != nil { ... }
//	// A plain function:
//	balance, err := circuitbreaker.Run(ctx, br, func(ctx context.Context) (int, error) {
//		return client.Balance(ctx, account)
//	})
//	// A rampart.Service:
//	guarded := circuitbreaker.NewLayer[Req, Resp](br, nil).Wrap(backend)
//	// A layer in a stack:
//	svc := rampart.NewBuilder[Req, Resp]().
//		Layer(circuitbreaker.NewLayer[Req, Resp](br, nil)).
//		Service(backend)
//
// An open breaker fails the call at once with an [*OpenError], which
// matches [ErrOpen] and unwraps to the failure that tripped the breaker.
// Share one *Breaker among every caller of one dependency; a [Group] keeps
// one per host, method or tenant. Where the breaker goes among the other
// layers is shown in the [rampart] package documentation.
//
// # Why
//
// Retries make an outage worse: callers wait for timeouts and the
// dependency gets more load while it recovers. A breaker fails calls
// without making them for a cool-down, then lets probes through and closes
// when they succeed. The pattern is from Michael Nygard's "Release It!";
// the behaviour follows Hystrix, resilience4j and Polly where they agree.
//
// # States
//
//	Closed ──policy trips──► Open ──cool-down ends, next acquire──► HalfOpen
//	   ▲                       ▲                                       │
//	   └──── probes succeed ───┼──────────── a probe fails ────────────┘
//
// A [Policy] decides when to trip and when probes close: [Consecutive]
// (the default), [FailureRate], [SlowCalls], [SuccessRate], [Any] or a
// [TripFunc]. A [Switch] forces breakers open or closed by hand,
// [Breaker.Subscribe] reports transitions, [Breaker.ApplyRemote] takes
// state shared by other replicas, and [Breaker.TryAcquire] drives a
// breaker by hand.
//
// # What counts as a failure
//
// A nil error is a success and any other error a failure, except one
// returned after the caller cancelled the call's context, which is
// ignored; an expired deadline is a failure. [Config.IsFailure] excuses
// errors (a "not found"), and [NewLayer] judges responses (an
// HTTP 503).
package circuitbreaker
