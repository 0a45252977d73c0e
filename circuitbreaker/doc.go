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
// of Hystrix, resilience4j and Polly where they agree, and the circuit
// breaker contract of rampart's DESIGN.md.
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
// # Order
//
// Share one *Breaker among every caller of one dependency. Put its layer
// inside the retry layer, so that every attempt asks the breaker first and
// an open breaker ends the retry loop at once with its [*OpenError] (which
// unwraps to the failure that tripped the breaker, so the caller still
// sees it), and
// put a per-attempt timeout inside the breaker, so that an attempt the
// dependency leaves hanging counts as a failure:
//
//	br, err := circuitbreaker.New(circuitbreaker.Config{ResetTimeout: 10 * time.Second})
//	// ... and, checking each error: total and perAttempt from
//	// timeout.NewLayer[Req, Resp](2*time.Second) and (500*time.Millisecond),
//	// retrying from retry.NewLayer[Req, Resp](retryCfg).
//	svc := rampart.NewBuilder[Req, Resp]().
//		Layer(total).                                  // 1. bounds the whole call
//		Layer(retrying).                               // 2. retries failed attempts
//		Layer(circuitbreaker.NewLayer[Req, Resp](br)). // 3. one permit per attempt
//		Layer(perAttempt).                             // 4. a timeout is a failure
//		Service(backend)
//
// With the breaker outside the retry loop instead, it sees one outcome per
// request whatever its attempts were, and once it has let a request in it
// cannot stop that request's retries, however the dependency fares.
//
// Code that is not a [rampart.Service] drives the breaker by hand with
// [Breaker.TryAcquire] and the returned [Permit].
//
// # What counts as a failure
//
// By default a nil error is a success and any other error a failure,
// with one exception: an error returned after the caller cancelled the
// call's context is ignored, because the caller gave up and the dependency
// did nothing wrong. An expired deadline, the caller's or a timeout
// layer's, is a failure: the dependency did not answer in the time it had.
// A context.Canceled that the dependency itself returns, while the caller's
// context is live, is a failure too. [Config.IsFailure] marks errors that
// do not mean the dependency is unhealthy (a "not found"), and
// [NewClassifiedLayer] judges responses (an HTTP 503). See [ClassifyContext].
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
