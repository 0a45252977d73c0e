package loadshed

import (
	"context"
	"errors"
	"fmt"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/internal/refusal"
	"github.com/rampart-go/rampart/observe"
)

// ErrOverloaded is the error both layers of this package return when they
// refuse a call: the watched resource was not ready ([NewLayer]) or the
// adaptive throttle refused locally ([NewThrottleLayer]). The inner service
// was not called. It is returned as it is, never wrapped, so refusing
// allocates nothing. It carries no retry delay: shedding signals overload,
// not a known time at which capacity frees. It matches
// [rampart.ErrRefused].
var ErrOverloaded = refusal.New("loadshed: overloaded")

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
//
// [NewLayer] rejects a nil ReadyFunc; called directly, it is never ready.
type ReadyFunc func() bool

// Ready returns f(), or false for a nil f.
func (f ReadyFunc) Ready() bool { return f != nil && f() }

// NewLayer returns a layer that refuses a call with [ErrOverloaded] when
// cfg.Readiness.Ready() is false, and otherwise calls the inner service
// and returns its result unchanged; a call that carries a criticality is
// judged as [CriticalReadiness] says. It is Tower's load_shed with
// readiness made explicit: put it outside the layer that would queue (a
// concurrency layer in Wait mode) and pass it the same resource.
//
// The check and the queueing layer's own admission are not one atomic
// step: a call that finds r ready may still wait briefly if another call
// takes the last slot first. Shedding is thus best effort, and the
// resource's own limit stays exact.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewLayer returns an error when cfg.Readiness is nil or a nil pointer or
// func.
func NewLayer[Req, Resp any](cfg Config) (rampart.Layer[Req, Resp], error) {
	r := cfg.Readiness
	if r == nil {
		return nil, errors.New("loadshed: readiness must not be nil")
	}
	if nilvalue.Is(r) {
		return nil, fmt.Errorf("loadshed: readiness must not be a nil %T", r)
	}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		if nilservice.Is(inner) {
			return rampart.Failing[Req, Resp]("loadshed: Wrap")
		}
		crit, _ := r.(CriticalReadiness)
		return &shed[Req, Resp]{inner: inner, ready: r, crit: crit, name: cfg.Name, obs: cfg.Observer}
	}), nil
}

// Config configures a layer built by [NewLayer]; its Name and Observer
// are for the layer's events.
type Config struct {
	// Readiness is the resource whose readiness decides, as [NewLayer]
	// says. It must not be nil, nor a nil pointer or func.
	Readiness Readiness

	// Name names the layer in its events. Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each call the layer refuses (an
	// [observe.Refused] event with [ErrOverloaded]). See package observe.
	Observer observe.Observer
}

// refused reports a refusal to obs, if not nil.
func refused(ctx context.Context, name string, obs observe.Observer) {
	if obs != nil {
		obs.Observe(ctx, observe.Event{Source: observe.LoadShed, Name: name, Kind: observe.Refused, Err: ErrOverloaded})
	}
}

type shed[Req, Resp any] struct {
	inner rampart.Service[Req, Resp]
	ready Readiness
	crit  CriticalReadiness // ready, when it tells criticalities apart
	name  string
	obs   observe.Observer
}

func (s *shed[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if !s.admits(ctx) {
		refused(ctx, s.name, s.obs)
		var zero Resp
		return zero, ErrOverloaded
	}
	return s.inner.Call(ctx, req)
}
