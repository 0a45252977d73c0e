package rampart

import (
	"context"
	"errors"
	"fmt"
)

// ErrNilService is matched, with [errors.Is], by the error that rampart
// returns where a [Service] or [Layer] it was given is nil: a layer's Wrap
// of a nil service, a [LayerFunc] that returned nil, or a [Builder] given a
// nil service. Constructors that return an error report a nil service at
// construction; a Wrap method, which cannot return an error, returns a
// service that fails every call with an error naming what was nil, so no
// call panics.
var ErrNilService = errors.New("rampart: nil service")

// Failing returns a [Service] whose every call returns a zero Resp and an
// error that wraps [ErrNilService] and names what was nil, for example
// Failing[Req, Resp]("retry: Wrap").
// Layers use it where a nil inner service can only be reported per call.
// It is safe for concurrent use.
func Failing[Req, Resp any](what string) Service[Req, Resp] {
	return failWith[Req, Resp](fmt.Errorf("%s: %w", what, ErrNilService))
}

// failWith returns a [Service] whose every call returns a zero Resp and err.
func failWith[Req, Resp any](err error) Service[Req, Resp] {
	return ServiceFunc[Req, Resp](func(context.Context, Req) (Resp, error) {
		var zero Resp
		return zero, err
	})
}
