// Package coalesce makes identical concurrent requests share one call to
// the inner service, with golang.org/x/sync/singleflight.
//
// # Quick start
//
//	l, err := coalesce.NewLayer[Req, Resp](coalesce.Config[Req]{Key: func(req Req) string {
//		return req.ItemID // equal keys share one call; "" is never coalesced
//	}})
//	if err != nil {
//		return err
//	}
//	svc := l.Wrap(backend)
//
// # Why
//
// When a popular item expires from a cache, or a dependency comes back
// after an outage, many callers ask for the same thing at the same moment
// and the backend does the same work once per caller (a thundering herd, or
// cache stampede). Coalescing sends one request and gives its result to
// everyone who asked while it was in flight, so the backend's load follows
// the number of distinct requests rather than the number of callers. This
// is request collapsing, as in Hystrix's collapser and groupcache's
// singleflight.
//
// Sharing a call across callers raises the question of whose context it
// runs under. Here every caller can leave on its own: a caller whose
// context is done returns at once with its context's error, and the shared
// call goes on for the others. The shared call is cancelled only when every
// caller has left. See [NewLayer] for the exact rules.
//
// # Order
//
// Coalesce outside retries and timeouts, so that one shared call carries
// one retry loop and a timeout of its own (the shared call has no caller's
// deadline), and inside anything that is per caller (authentication,
// per-caller rate limits); the canonical full stack is in the package
// documentation of [github.com/rampart-go/rampart].
package coalesce
