// Package ratelimit bounds how often calls start, with a token bucket from
// golang.org/x/time/rate, and gives every refusal a typed error that says
// how long until a token is free. Package concurrency bounds how many calls
// are in flight; this package bounds how often they start.
//
// # Quick start
//
//	lim := rate.NewLimiter(100, 10) // 100 calls a second, bursts of 10
//	l, err := ratelimit.NewLayer[Req, Resp](ratelimit.Config{Limiter: lim, Mode: ratelimit.Wait})
//	if err != nil {
//		return err
//	}
//	svc := l.Wrap(backend) // or pass l to a rampart.Builder
//
// [NewKeyed] and [NewKeyedLayer] keep one bucket per key (per user, per
// tenant).
//
// # Why
//
// A dependency has a rate it can serve; a client that sends faster only
// builds queues there, and a server that accepts faster than it can serve
// answers everyone late. A token bucket lets short bursts through and holds
// the long-run rate at the configured limit. The caller passes the
// [*rate.Limiter] itself, so one limiter can bound several services (for
// example every endpoint of one API quota), and [Keyed] keeps one limiter per
// key with bounded memory.
//
// A limited call either waits for its token, bounded by its context, or is
// refused at once ([Mode], shared with package concurrency). A refusal is a
// [*LimitedError] that matches [ErrLimited] and implements RetryAfter, so a
// retry layer can wait exactly as long as needed and an HTTP server can
// answer 429 with a Retry-After header. In Wait mode the layer never waits
// for a token that would arrive at or after the context's deadline: it
// refuses at once instead, so a caller does not spend its whole deadline in
// a queue only to time out.
//
// # Order
//
// Put the rate limit inside the timeout, so waiting for a token counts
// against the deadline, inside retries, so each attempt takes a token, and
// outside the circuit breaker, so a refusal is not counted as a failure of
// the dependency. The [rampart] package documentation gives the full order.
package ratelimit
