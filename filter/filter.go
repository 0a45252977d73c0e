// Package filter refuses requests that fail a check before they reach the
// inner service, as Tower's filter layer does.
//
// # Quick start
//
//	l, err := filter.NewLayer[Req, Resp](func(ctx context.Context, req Req) error {
//		if req.Tenant == "" {
//			return errMissingTenant // returned to the caller as it is
//		}
//		return nil
//	})
//	if err != nil {
//		return err
//	}
//	svc := l.Wrap(backend)
//
// A check that only says yes or no refuses with [ErrRefused].
//
// # Why
//
// Some requests should never reach a dependency: malformed input, callers
// without permission, requests for a tenant that is switched off, writes
// during a maintenance window. Checking them in a layer keeps the check in
// one place for every service it guards, and keeps refused requests out of
// everything further in: they take no rate-limit token, no concurrency
// slot and no retry budget, and a circuit breaker never counts them as the
// dependency's failures.
//
// # Order
//
// Filter as far out as the check allows, so that refused requests cost
// nothing further in; the canonical full stack is in the package
// documentation of [github.com/rampart-go/rampart].
package filter

import (
	"context"
	"errors"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/internal/refusal"
)

// ErrRefused is the error for a check to return when it refuses a
// request, so that callers (and ramparthttp, which answers 403 Forbidden)
// can tell a refusal from a failure: match it with [errors.Is]. It matches
// [rampart.ErrRefused] too. Returning it as it is allocates nothing.
var ErrRefused = refusal.New("filter: refused")

// NewLayer returns a layer that calls check before each call. When check
// returns a non-nil error, the call fails with that error, returned as it
// is, and the inner service is not called; otherwise the inner service's
// result comes back unchanged. check decides what its errors match, so a
// caller can tell a refusal from a failure of the inner service. check must
// be safe for concurrent use.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewLayer returns an error when check is nil.
func NewLayer[Req, Resp any](check func(ctx context.Context, req Req) error) (rampart.Layer[Req, Resp], error) {
	if check == nil {
		return nil, errors.New("filter: check must not be nil")
	}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		if nilservice.Is(inner) {
			return rampart.Failing[Req, Resp]("filter: Wrap")
		}
		return rampart.ServiceFunc[Req, Resp](func(ctx context.Context, req Req) (Resp, error) {
			if err := check(ctx, req); err != nil {
				var zero Resp
				return zero, err
			}
			return inner.Call(ctx, req)
		})
	}), nil
}
