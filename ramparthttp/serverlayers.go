package ramparthttp

import (
	"errors"
	"net/http"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/timeout"
)

// ServerConcurrencyLimitLayer returns a layer that runs each request in a
// slot of lim, a fixed [*concurrency.Limiter] (at most lim.Max() handlers
// at once across every layer built with lim) or an adaptive
// [*concurrency.AdaptiveLimiter]. It is [concurrency.NewLayer] for a server
// stack.
// In [concurrency.Reject] mode a request finding every slot taken is
// refused at once with a [*concurrency.LimitedError] (answered 503); in
// [concurrency.Wait] mode it queues until a slot frees or its context is
// done. Put [ServerShedLayer] with the same lim outside a Wait layer to
// refuse instead of queueing. It returns an error when lim is nil or mode
// is invalid.
func ServerConcurrencyLimitLayer(lim concurrency.Slots, mode concurrency.Mode) (ServerLayer, error) {
	return concurrency.NewLayer[Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: mode})
}

// ServerShedLayer returns a layer that refuses a request with
// [loadshed.ErrOverloaded] (answered 503) when r is not ready, for example
// a *concurrency.Limiter with no free slot. It is [loadshed.NewLayer] for a
// server stack. It returns an error when r is nil.
func ServerShedLayer(r loadshed.Readiness) (ServerLayer, error) {
	return loadshed.NewLayer[Exchange, struct{}](loadshed.Config{Readiness: r})
}

// ServerRateLimitLayer returns a layer that takes a token from lim before
// each request. It is [ratelimit.NewLayer] for a server stack: a refusal is
// a [*ratelimit.LimitedError], answered 429 with a Retry-After header
// saying when the next token is due. It returns an error when lim is nil
// or mode is invalid.
func ServerRateLimitLayer(lim *rate.Limiter, mode ratelimit.Mode) (ServerLayer, error) {
	return ratelimit.NewLayer[Exchange, struct{}](ratelimit.Config{Limiter: lim, Mode: mode})
}

// ServerKeyedRateLimitLayer returns a layer that takes a token, before each
// request, from the limiter k holds for key(r): per client address, per
// API key, per tenant. It is [ratelimit.NewKeyedLayer] for a server stack,
// answered as [ServerRateLimitLayer] is. key must be safe for concurrent
// use. It returns an error when k or key is nil or mode is invalid.
func ServerKeyedRateLimitLayer(k *ratelimit.Keyed, key func(r *http.Request) string, mode ratelimit.Mode) (ServerLayer, error) {
	if key == nil {
		return nil, errors.New("ramparthttp: key must not be nil")
	}
	return ratelimit.NewKeyedLayer[Exchange, struct{}](k, func(x Exchange) string { return key(x.Request) }, mode)
}

// ServerTimeoutLayer returns a layer that gives each request's handler a
// context with a deadline d after the request enters the layer. It is
// [timeout.NewLayer] for a server stack. A handler that returns without
// answering once its context is done gets a 503 answer (see [Handler]); a
// handler that answers, even late, keeps its answer. The handler must
// honour its context: the layer runs it on the request's goroutine and
// waits for it (timeout's Abandon mode must not be used in a server stack,
// since an abandoned handler would write after ServeHTTP returned). d must
// be > 0, otherwise ServerTimeoutLayer returns an error naming it.
func ServerTimeoutLayer(d time.Duration) (ServerLayer, error) {
	return timeout.NewLayer(timeout.Config[Exchange, struct{}]{Timeout: d})
}
