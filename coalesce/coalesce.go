package coalesce

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/observe"
)

// PanicError is the value every caller sharing a call panics with when the
// inner service panicked during that call. The panic happened on another
// goroutine, so it is passed to each caller and raised again there, with
// the stack of the original panic. It is [rampart.PanicError], the value
// every layer raises a panic of another goroutine with.
type PanicError = rampart.PanicError

// NewLayer returns a layer that coalesces concurrent calls with equal keys:
// while a call for cfg.Key(req) is in flight, further calls with that key do
// not call the inner service but wait for the call in flight and receive
// its response and error. Once it returns, the next call with that key
// starts a new one; nothing is cached. Every caller receives the same Resp
// value, so a Resp holding pointers, slices or maps is shared and must not
// be modified. key must be safe for concurrent use; an empty key means the
// request is not coalesced and calls the inner service directly.
//
// Each wrapped service coalesces its own calls.
//
// Criticality: the shared call runs with the criticality of the caller
// that started it ([rampart.CriticalityOf]), and a limit or shedder below
// judges it by that. So a caller joins a shared call only when that call
// is at least as critical as its own (one of its own criticality first,
// else a more critical one); a more critical caller starts a call of its
// own, which later callers of its criticality or below join. A critical
// request is never shed because it waited on a sheddable one. Without
// criticalities in the contexts, all calls with a key share one call.
//
// Contexts: the shared call runs with a context that carries the values of
// the caller that started it (context.WithoutCancel), but none of its
// callers' deadlines or cancellations. A caller whose context is done
// stops waiting and returns ctx.Err(); the shared call goes on for the
// other callers, and is cancelled (its context's Err becomes
// context.Canceled) when the last caller has left this way. So the call
// runs at most as long as its most patient caller waits; to bound it
// further, put a timeout layer inside this one. A call whose context is
// already done when it arrives returns ctx.Err() and joins nothing.
//
// Panics: if the inner service panics, every caller waiting for that call
// panics with a [*PanicError] holding the value and stack. A shared call
// that exits its goroutine with runtime.Goexit (never valid for a Service:
// a test double calling t.FailNow, say) fails every caller waiting for it
// with [ErrGoexit].
//
// A coalesced call allocates: singleflight runs each shared call on a new
// goroutine and answers through a channel per caller.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewLayer returns an error when cfg.Key is nil.
func NewLayer[Req, Resp any](cfg Config[Req]) (rampart.Layer[Req, Resp], error) {
	if cfg.Key == nil {
		return nil, errors.New("coalesce: Key must not be nil")
	}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		if nilservice.Is(inner) {
			return rampart.Failing[Req, Resp]("coalesce: Wrap")
		}
		return &group[Req, Resp]{inner: inner, key: cfg.Key, name: cfg.Name, obs: cfg.Observer, flights: make(map[flightKey]*flight)}
	}), nil
}

// Config configures a layer built by [NewLayer]; its Name and Observer
// are for the layer's events.
type Config[Req any] struct {
	// Key gives the key under which a request is coalesced, as [NewLayer]
	// says. It must not be nil.
	Key func(Req) string

	// Name names the layer in its events. Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each call that joins an
	// identical call in flight instead of making its own (an
	// [observe.Joined] event). See package observe.
	Observer observe.Observer
}

type group[Req, Resp any] struct {
	inner rampart.Service[Req, Resp]
	key   func(Req) string
	name  string
	obs   observe.Observer
	// calls holds the shared calls of each criticality, indexed by the
	// criticality + 1, so that equal keys of different criticalities are
	// different calls.
	calls [3]singleflight.Group

	mu sync.Mutex
	// flights holds, for each key and criticality with callers waiting,
	// the context its shared calls run with and how many callers wait.
	// Every singleflight call for a flight's key, in the group of its
	// criticality, belongs to that flight:
	// a flight is created only when none is held, and when its last caller
	// leaves it is removed and its key forgotten by singleflight under mu,
	// so a later caller never joins a call whose context was cancelled.
	// guarded by mu
	flights map[flightKey]*flight
}

// flightKey names a flight: the request's key and the criticality of the
// caller that started it.
type flightKey struct {
	key  string
	crit rampart.Criticality
}

// ErrGoexit is the error of every caller of a shared call that ended with
// runtime.Goexit instead of returning.
var ErrGoexit = errors.New("coalesce: the shared call exited its goroutine (runtime.Goexit)")

// flight is one shared call and its callers. ctx is the shared call's own
// context, detached from every caller's cancellation, kept here because
// the call outlives whichever caller started it.
type flight struct {
	fk      flightKey
	ctx     context.Context
	cancel  context.CancelFunc
	exited  chan struct{} // closed if the call ends with runtime.Goexit
	waiters int           // guarded by group.mu
}

// outcome is what a shared call passes to its callers through singleflight.
type outcome[Resp any] struct {
	resp  Resp
	panic *PanicError
}

func (g *group[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	var zero Resp
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	key := g.key(req)
	if key == "" {
		return g.inner.Call(ctx, req)
	}

	crit := rampart.CriticalityOf(ctx)
	g.mu.Lock()
	// Join the flight of this criticality, else a more critical one.
	var f *flight
	for c := crit; f == nil && c <= rampart.Critical; c++ {
		f = g.flights[flightKey{key, c}]
	}
	joined := f != nil
	if f == nil {
		fk := flightKey{key, crit}
		f = &flight{fk: fk, exited: make(chan struct{})}
		f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
		g.flights[fk] = f
	}
	f.waiters++
	ch := g.group(f).DoChan(key, func() (any, error) { return g.run(f, req) })
	g.mu.Unlock()
	if joined && g.obs != nil {
		g.obs.Observe(ctx, observe.Event{Source: observe.Coalesce, Name: g.name, Kind: observe.Joined})
	}

	select {
	case <-f.exited:
		g.leave(f)
		return zero, ErrGoexit
	case r := <-ch:
		g.leave(f)
		o := r.Val.(outcome[Resp])
		if o.panic != nil {
			panic(o.panic)
		}
		return o.resp, r.Err
	case <-ctx.Done():
		g.leave(f)
		return zero, ctx.Err()
	}
}

// group returns the singleflight group of f's criticality.
func (g *group[Req, Resp]) group(f *flight) *singleflight.Group {
	return &g.calls[f.fk.crit-rampart.Sheddable]
}

// leave removes one caller from f, and f itself with its last caller.
func (g *group[Req, Resp]) leave(f *flight) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f.waiters--
	if f.waiters > 0 {
		return
	}
	if g.flights[f.fk] == f { // not replaced after a Goexit
		delete(g.flights, f.fk)
		g.group(f).Forget(f.fk.key)
	}
	f.cancel()
}

// run makes the shared call. It recovers a panic into the outcome so that
// each caller can raise it: singleflight.DoChan would otherwise crash the
// program from a goroutine nobody can recover in.
//
// A nil recover means runtime.Goexit, after which singleflight sends
// nothing: run then tells the flight's callers through f.exited, and
// retires the flight so that later callers start a new one.
func (g *group[Req, Resp]) run(f *flight, req Req) (v any, err error) {
	normal := false
	defer func() {
		if normal {
			return
		}
		if r := recover(); r != nil {
			v, err = outcome[Resp]{panic: &PanicError{Value: r, Stack: debug.Stack()}}, nil
			return
		}
		g.mu.Lock()
		if g.flights[f.fk] == f {
			delete(g.flights, f.fk)
			g.group(f).Forget(f.fk.key) // a caller arriving now starts a new call
		}
		g.mu.Unlock()
		close(f.exited)
	}()
	resp, err := g.inner.Call(f.ctx, req)
	normal = true
	return outcome[Resp]{resp: resp}, err
}
