// Package fallback answers a failed call with a substitute response
// computed from the request and the failure: a cached value, a default, a
// degraded answer.
//
// # Quick start
//
//	l, err := fallback.NewLayer(fallback.Config[Req, Resp]{
//		Fallback: func(ctx context.Context, req Req, err error) (Resp, error) {
//			return cache.Get(req) // a stale answer beats an error
//		},
//	})
//	if err != nil {
//		return err
//	}
//	svc := l.Wrap(backend)
//
// Config.When narrows which failures are answered.
//
// # Why
//
// Many callers would rather have a stale or partial answer now than an
// error: a product page can show no recommendations, a feed can show the
// cached copy, a feature flag can take its default. Putting that choice in
// a layer keeps it next to the other resilience policies, where the order
// is visible: a fallback outside a circuit breaker also answers while the
// breaker is open, which is usually what graceful degradation means. This
// is Hystrix's and resilience4j's fallback, with one rule they leave to the
// user made fixed: a caller that cancelled or ran out of time gets its own
// error back, never a fallback, because nobody is waiting for the answer
// and the error tells the caller's caller what happened.
//
// # Order
//
// Put the fallback outside the retry layer and the circuit breaker, so that
// it answers an open breaker, exhausted retries and timeouts alike; the
// canonical full stack is in the package documentation of
// [github.com/rampart-go/rampart].
package fallback

import (
	"context"
	"errors"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/observe"
)

// Config configures a fallback layer.
type Config[Req, Resp any] struct {
	// Fallback computes the response for a failed call from its context,
	// request and error. Its result, response and error, is returned to the
	// caller in place of the failure; to keep the original error visible
	// when the fallback fails too, wrap it (fmt.Errorf("...: %w", err)) or
	// join it (errors.Join). It must be safe for concurrent use. Required.
	Fallback func(ctx context.Context, req Req, err error) (Resp, error)
	// When reports whether a failure is answered by Fallback: for example
	// only errors.Is(err, circuitbreaker.ErrOpen), or everything except
	// validation errors. It is asked only for non-nil errors of calls the
	// caller has not abandoned, and must be safe for concurrent use. Nil
	// means every such error.
	When func(err error) bool

	// Name names the layer in its events. Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each call Fallback answers (an
	// [observe.FallbackUsed] event with the error it replaces), before
	// Fallback runs. See package observe.
	Observer observe.Observer
}

// NewLayer returns a layer that calls the inner service and, when the call
// fails with an error that cfg.When accepts, returns cfg.Fallback's result
// instead.
//
// The fallback never runs when the caller has abandoned the call: if ctx is
// done (cancelled, or past its deadline) when the inner service returns,
// the inner response and error are returned as they are. A deadline set
// further in, by a timeout layer inside this one, is a failure like any
// other. A successful call, and a failure that When refuses, come back
// unchanged. A panic in the inner service propagates; Fallback is not
// called.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewLayer returns an error when cfg.Fallback is nil; the zero Config is
// thus an error.
func NewLayer[Req, Resp any](cfg Config[Req, Resp]) (rampart.Layer[Req, Resp], error) {
	if cfg.Fallback == nil {
		return nil, errors.New("fallback: Fallback must not be nil")
	}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		if nilservice.Is(inner) {
			return rampart.Failing[Req, Resp]("fallback: Wrap")
		}
		return &service[Req, Resp]{inner: inner, cfg: cfg}
	}), nil
}

type service[Req, Resp any] struct {
	inner rampart.Service[Req, Resp]
	cfg   Config[Req, Resp]
}

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	resp, err := s.inner.Call(ctx, req)
	if err == nil || ctx.Err() != nil || (s.cfg.When != nil && !s.cfg.When(err)) {
		return resp, err
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.Observe(ctx, observe.Event{Source: observe.Fallback, Name: s.cfg.Name, Kind: observe.FallbackUsed, Err: err})
	}
	return s.cfg.Fallback(ctx, req, err)
}
