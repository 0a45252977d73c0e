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
//	guarded := circuitbreaker.Wrap(backend, br)
//	// A layer in a stack:
//	svc := rampart.NewBuilder[Req, Resp]().
//		Layer(circuitbreaker.NewLayer[Req, Resp](br)).
//		Service(backend)
//
// An open breaker fails the call at once with an [*OpenError], which
// matches [ErrOpen] and unwraps to the failure that tripped the breaker.
// Share one *Breaker among every caller of one dependency; use a [Group]
// for one breaker per host, method or tenant. Where the breaker goes among
// the other layers (inside retries, outside a per-attempt timeout) is shown
// in the [rampart] package documentation.
//
// # Why
//
// Retries help with transient faults; they make a real outage worse. When a
// dependency is down every caller waits for its timeout, every failure is
// retried, and the dependency receives more load exactly when it is trying
// to recover. A circuit breaker notices the failures and, for a cool-down,
// fails calls at once without making them, so callers stop paying the
// timeout and the dependency gets a break. Then it lets a few probe calls
// through, and closes again only when they succeed. The pattern is from
// Michael Nygard's "Release It!"; the behaviour follows Hystrix,
// resilience4j and Polly where they agree.
//
// # States
//
//	Closed ──policy trips──► Open ──cool-down ends, next acquire──► HalfOpen
//	   ▲                       ▲                                       │
//	   └──── probes succeed ───┼──────────── a probe fails ────────────┘
//
// A [Breaker] has no goroutine: Open becomes HalfOpen lazily, on the first
// acquire after the cool-down, and that caller is the first probe. (A
// runtime timer armed when it opens tells it when to start looking at the
// clock.) A
// [Policy] decides when to trip and when probes close: [Consecutive] (the
// default), [FailureRate], [SlowCalls], [SuccessRate], [Any], or a
// [TripFunc] of a few lines. A [Switch] forces breakers open or closed by
// hand. [Breaker.Subscribe] reports every transition.
//
// Besides [Run] and the layer from [NewLayer], any code can drive a breaker
// by hand with [Breaker.TryAcquire] and the returned [Permit].
//
// # What counts as a failure
//
// A nil error is a success and any other error a failure, except an error
// returned after the caller cancelled the call's context, which is ignored:
// the caller gave up, the dependency did nothing wrong. An expired
// deadline is a failure. [Config.IsFailure] marks errors that do not mean
// the dependency is unhealthy (a "not found"), and [NewClassifiedLayer]
// judges responses (an HTTP 503). See [ClassifyContext].
//
// # Cost
//
// A call through a Closed breaker takes no lock and allocates nothing;
// with the default policy it reads no clock and writes no shared memory.
// Locks are taken for transitions, failures and in HalfOpen. An Open
// breaker rejects with a prebuilt error, reading no clock until the last
// eighth (at most a second) of its cool-down.
package circuitbreaker
