package concurrency

import (
	"context"
	"errors"
	"fmt"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/wrap"
)

// NewLayer returns a layer that runs each call in a slot of l, so at most
// as many calls run at once across every service built with l as l allows:
// Max for a [*Limiter], the current Limit for an [*AdaptiveLimiter].
//
// With mode [Wait], a call takes its slot with [Limiter.Acquire] or
// [AdaptiveLimiter.Acquire]: one that finds every slot taken waits for one
// in FIFO order; if ctx is done first, the call fails with an error that
// wraps ctx.Err() (so errors.Is(err, context.DeadlineExceeded) or
// context.Canceled holds) and the inner service is not called. An
// AdaptiveLimiter whose [AdaptiveConfig.MaxWaiting] calls already wait
// refuses the call at once with a [*LimitedError]. With mode [Reject], a
// call that finds every slot taken fails at once with a [*LimitedError]
// matching [ErrLimited], whose RetryAfter is 0 for a Limiter (it cannot
// know when a slot frees) and the latest window's average latency for an
// AdaptiveLimiter; refusals share one value (per window, for an
// AdaptiveLimiter), so do not modify it. In either mode a ctx already done
// when the call arrives fails with an error matching ctx.Err() and takes
// no slot.
//
// The slot is held while the inner service runs and given back when it
// returns or panics. Errors from the inner service come back unchanged. A
// call that gets a slot allocates nothing, nor does a Reject refusal. With
// a [*Limiter], each call takes and gives back a slot of the semaphore,
// which locks its mutex briefly each time: under very high parallelism on
// one Limiter that mutex is the layer's cost (see BenchmarkLayer). With an
// [*AdaptiveLimiter], each call's latency, measured from when it gets its
// slot until the inner service returns or panics, feeds the limiter's
// estimate.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewLayer returns an error when l is nil, l is a zero Limiter or
// AdaptiveLimiter (not made by [New] or [NewAdaptive]), or mode is not Wait
// or Reject.
func NewLayer[Req, Resp any](l Slots, mode Mode) (rampart.Layer[Req, Resp], error) {
	if l == nil {
		return nil, errors.New("concurrency: limiter must not be nil")
	}
	if err := l.valid(); err != nil {
		return nil, err
	}
	if mode != Wait && mode != Reject {
		return nil, fmt.Errorf("concurrency: mode must be Wait or Reject, got %d", mode)
	}
	return layer[Req, Resp]{lim: l, mode: mode}, nil
}

// Wrap wraps svc in the layer [NewLayer] returns, inferring the type
// parameters from svc. It returns the errors [NewLayer] returns, and an
// error matching [rampart.ErrNilService] when svc is nil.
func Wrap[Req, Resp any](svc rampart.Service[Req, Resp], lim Slots, mode Mode) (rampart.Service[Req, Resp], error) {
	l, err := NewLayer[Req, Resp](lim, mode)
	return wrap.Service("concurrency", svc, l, err)
}

// Slots is a limiter whose slots [NewLayer] runs calls in: a [*Limiter]
// (a fixed number of slots) or an [*AdaptiveLimiter] (a number that follows
// the latency of the calls). Both also implement loadshed's Readiness
// through Ready. Only this package's limiters implement Slots.
type Slots interface {
	// Ready reports whether a call arriving now would get a slot without
	// waiting.
	Ready() bool
	// take gets a slot as mode says, or returns the refusal or the
	// context's error.
	take(ctx context.Context, mode Mode) (Permit, error)
	// give returns the slot p was taken with.
	give(p Permit)
	// valid reports a limiter not made by its constructor.
	valid() error
}

type layer[Req, Resp any] struct {
	lim  Slots
	mode Mode
}

func (l layer[Req, Resp]) Wrap(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
	if inner == nil {
		return rampart.Failing[Req, Resp]("concurrency: Wrap")
	}
	return &service[Req, Resp]{inner: inner, lim: l.lim, mode: l.mode}
}

type service[Req, Resp any] struct {
	inner rampart.Service[Req, Resp]
	lim   Slots
	mode  Mode
}

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	p, err := s.lim.take(ctx, s.mode)
	if err != nil {
		var zero Resp
		return zero, err
	}
	defer s.lim.give(p)
	return s.inner.Call(ctx, req)
}
