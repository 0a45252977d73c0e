// Package mapping adapts a service to other request, response or error
// types with plain functions, as Tower's map_request, map_response,
// map_result and map_err do.
//
// # Quick start
//
// Build the typed stack first, then adapt it at its edge:
//
//	inner := rampart.NewBuilder[*http.Request, *http.Response]().
//		Layer(retryLayer).
//		Service(httpClient)
//	users, err := mapping.Request(inner, encodeUserRequest) // Service[UserID, *http.Response]
//
// # Why
//
// Layers in rampart keep the types they wrap: a Builder[Req, Resp] stacks
// Layer[Req, Resp] values only. Real stacks change types at their edges:
// an HTTP handler decodes a request into a domain value, a client encodes
// a domain value into an *http.Request, a gRPC status becomes a domain
// error. Go methods cannot take type parameters, so the type-changing
// adapters here are generic functions from one Service to another ([Request],
// [Response], [Result]); only the error mapping, which keeps the types, is
// a Layer ([NewErrorLayer]).
//
// # Naming
//
// Each function is named after what it converts ([Request], [Response],
// [Result]), takes the service first and returns the new service and an
// error: a conversion changes the service's types, so it cannot be a
// Layer. Only the error mapping keeps the types, so it is a Layer, for a
// Builder: [NewErrorLayer].
package mapping

import (
	"context"
	"errors"
	"fmt"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilservice"
)

var errNilSvc = fmt.Errorf("mapping: svc must not be nil: %w", rampart.ErrNilService)

// Request returns a service that converts each request with f and calls svc
// with the result. If f fails, its error is returned as it is and svc is
// not called. f receives the call's context, for converters that need it
// (http.NewRequestWithContext), and must be safe for concurrent use.
//
// Request returns an error when svc or f is nil; for a nil svc it matches
// [rampart.ErrNilService].
func Request[ReqA, ReqB, Resp any](svc rampart.Service[ReqB, Resp], f func(ctx context.Context, req ReqA) (ReqB, error)) (rampart.Service[ReqA, Resp], error) {
	if svc == nil {
		return nil, errNilSvc
	}
	if f == nil {
		return nil, errors.New("mapping: f must not be nil")
	}
	return rampart.ServiceFunc[ReqA, Resp](func(ctx context.Context, req ReqA) (Resp, error) {
		b, err := f(ctx, req)
		if err != nil {
			var zero Resp
			return zero, err
		}
		return svc.Call(ctx, b)
	}), nil
}

// Response returns a service that calls svc and converts a successful
// response with f; f's error, if any, is returned as it is. When svc fails,
// f is not called and the error is returned as it is with a zero RespB: a
// partial RespA that svc returned alongside its error is dropped, since f
// converts only successes. Use [Result] to convert partial responses too.
// f must be safe for concurrent use.
//
// Response returns an error when svc or f is nil; for a nil svc it matches
// [rampart.ErrNilService].
func Response[Req, RespA, RespB any](svc rampart.Service[Req, RespA], f func(resp RespA) (RespB, error)) (rampart.Service[Req, RespB], error) {
	if f == nil {
		return nil, errors.New("mapping: f must not be nil")
	}
	return Result(svc, func(resp RespA, err error) (RespB, error) {
		if err != nil {
			var zero RespB
			return zero, err
		}
		return f(resp)
	})
}

// Result returns a service that calls svc and returns f applied to its
// response and error, whatever they are: f may convert a partial response
// that came with an error, turn an error into a response, or a response
// into an error. f must be safe for concurrent use.
//
// Result returns an error when svc or f is nil; for a nil svc it matches
// [rampart.ErrNilService].
func Result[Req, RespA, RespB any](svc rampart.Service[Req, RespA], f func(resp RespA, err error) (RespB, error)) (rampart.Service[Req, RespB], error) {
	if svc == nil {
		return nil, errNilSvc
	}
	if f == nil {
		return nil, errors.New("mapping: f must not be nil")
	}
	return rampart.ServiceFunc[Req, RespB](func(ctx context.Context, req Req) (RespB, error) {
		return f(svc.Call(ctx, req))
	}), nil
}

// NewErrorLayer returns a layer that replaces each non-nil error from the
// inner service with f(err), and returns successes unchanged without
// calling f. The response the inner service returned alongside the error
// is kept. If f returns nil, the call succeeds with that response; to keep
// the original error matchable, wrap it (fmt.Errorf("...: %w", err)). f
// must be safe for concurrent use.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewErrorLayer returns an error when f is nil.
func NewErrorLayer[Req, Resp any](f func(err error) error) (rampart.Layer[Req, Resp], error) {
	if f == nil {
		return nil, errors.New("mapping: f must not be nil")
	}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		if nilservice.Is(inner) {
			return rampart.Failing[Req, Resp]("mapping: Wrap")
		}
		return rampart.ServiceFunc[Req, Resp](func(ctx context.Context, req Req) (Resp, error) {
			resp, err := inner.Call(ctx, req)
			if err != nil {
				err = f(err)
			}
			return resp, err
		})
	}), nil
}
