// Package circuitbreaker stops calling a dependency that is down.
//
// # Why
//
// Retries help with transient faults; they make a real outage worse. When a
// dependency is down every caller waits for its timeout, every failure is
// retried, and the dependency receives more load exactly when it is trying
// to recover. A circuit breaker notices the failures and, for a cool-down,
// fails calls at once without making them ("fail fast"), so callers stop
// paying the timeout and the dependency gets a break. Then it lets a few
// probe calls through, and closes again only when they succeed. The pattern
// is from Michael Nygard's "Release It!"; this package follows the behaviour
// of Hystrix, resilience4j and Polly where they agree, and the contract
// CB1-CB14 of rampart's DESIGN.md.
//
// # States
//
//	Closed ──policy trips──► Open ──cool-down ends, next acquire──► HalfOpen
//	   ▲                       ▲                                       │
//	   └──── probes succeed ───┼──────────── a probe fails ────────────┘
//
// A [Breaker] has no goroutine: Open becomes HalfOpen lazily, on the first
// acquire after the cool-down, and that caller is the first probe. A
// [Policy] decides when to trip and when probes close; [Consecutive] is the
// default. A [Switch] can force breakers open or closed by hand.
//
// # Use
//
// Share one *Breaker among every caller of one dependency, and put its layer
// inside the retry layer, so that the breaker is consulted before each
// attempt and an open breaker ends the retry loop at once:
//
//	br, err := circuitbreaker.New(circuitbreaker.Config{ResetTimeout: 10 * time.Second})
//	...
//	svc := rampart.NewBuilder[Req, Resp]().
//		Layer(timeout.NewLayer[Req, Resp](2 * time.Second)).
//		Layer(retry.NewLayer[Req, Resp](retryCfg)).
//		Layer(circuitbreaker.NewLayer[Req, Resp](br)).
//		Service(backend)
//
// Code that is not a [rampart.Service] drives the breaker by hand with
// [Breaker.TryAcquire] and the returned [Permit].
//
// # Cost
//
// A call through a Closed breaker with the default policy takes no lock,
// reads no clock, writes no shared memory and allocates nothing; parallel
// callers do not contend. Locks are taken only for transitions, failures
// and in HalfOpen; listeners are called after the lock is released. An Open
// breaker rejects with one monotonic clock read and without allocating:
// callers rejected within the same millisecond share one [*OpenError],
// whose RetryAfter is therefore rounded up to a whole millisecond (never
// early). Rate policies take the lock for every outcome, as their window
// must see successes too, with one exception: a success into a full count
// window of [FailureRate] that holds no failure changes nothing, and costs
// one atomic load.
package circuitbreaker
