package loadshed

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/wrap"
)

// ErrOverloaded is the error both layers of this package return when they
// refuse a call: the watched resource was not ready ([NewLayer]) or the
// adaptive throttle refused locally ([NewThrottleLayer]). The inner service
// was not called. It is returned as it is, never wrapped, so refusing
// allocates nothing. It carries no retry delay: shedding signals overload,
// not a known time at which capacity frees.
var ErrOverloaded = errors.New("loadshed: overloaded")

// Readiness is a resource that can tell whether a call arriving now would
// be served without queueing: a free slot in a concurrency limit, room in a
// queue, a token in a bucket. *concurrency.Limiter implements it.
//
// Ready must be safe for concurrent use and cheap: it runs on every call.
// Its answer is advisory; the resource itself remains the authority.
type Readiness interface {
	Ready() bool
}

// ReadyFunc adapts a function to [Readiness], for example a token bucket:
//
//	loadshed.ReadyFunc(func() bool { return lim.Tokens() >= 1 })
type ReadyFunc func() bool

// Ready returns f().
func (f ReadyFunc) Ready() bool { return f() }

// NewLayer returns a layer that refuses a call with [ErrOverloaded] when
// r.Ready() is false, and otherwise calls the inner service and returns its
// result unchanged. It is Tower's load_shed with readiness made explicit:
// put it outside the layer that would queue (a concurrency layer in Wait mode)
// and pass it the same resource.
//
// The check and the queueing layer's own admission are not one atomic
// step: a call that finds r ready may still wait briefly if another call
// takes the last slot first. Shedding is thus best effort, and the
// resource's own limit stays exact.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewLayer returns an error when r is nil or a nil pointer or func.
func NewLayer[Req, Resp any](r Readiness) (rampart.Layer[Req, Resp], error) {
	if r == nil {
		return nil, errors.New("loadshed: readiness must not be nil")
	}
	if v := reflect.ValueOf(r); (v.Kind() == reflect.Pointer || v.Kind() == reflect.Func) && v.IsNil() {
		return nil, fmt.Errorf("loadshed: readiness must not be a nil %T", r)
	}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		if inner == nil {
			return rampart.Failing[Req, Resp]("loadshed: Wrap")
		}
		return &shed[Req, Resp]{inner: inner, ready: r}
	}), nil
}

// Wrap wraps svc in the layer [NewLayer] returns, inferring the type
// parameters from svc. It returns the errors [NewLayer] returns, and an
// error matching [rampart.ErrNilService] when svc is nil.
func Wrap[Req, Resp any](svc rampart.Service[Req, Resp], r Readiness) (rampart.Service[Req, Resp], error) {
	l, err := NewLayer[Req, Resp](r)
	return wrap.Service("loadshed", svc, l, err)
}

type shed[Req, Resp any] struct {
	inner rampart.Service[Req, Resp]
	ready Readiness
}

func (s *shed[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if !s.ready.Ready() {
		var zero Resp
		return zero, ErrOverloaded
	}
	return s.inner.Call(ctx, req)
}
