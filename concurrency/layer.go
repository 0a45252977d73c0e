package concurrency

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/observe"
)

// Config configures a layer built by [NewLayer]; its Name and Observer
// are for the layer's events.
type Config struct {
	// Limiter is the limiter whose slots the layer's calls take: a
	// [*Limiter] made by [New] or an [*AdaptiveLimiter] made by
	// [NewAdaptive].
	Limiter Slots

	// Mode says what a call does when every slot is taken: [Wait] (the
	// zero Mode) or [Refuse].
	Mode Mode

	// Name names the layer in its events. Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each call the layer refuses (an
	// [observe.Refused] event with the error returned and how long the
	// call waited) and each call that waited for a slot before it got one
	// (an [observe.Queued] event with the wait). A call that finds a slot
	// free reports nothing. With an Observer, a call in Wait mode first
	// tries for a free slot without waiting, and reads the clock only when
	// there is none. See package observe.
	Observer observe.Observer
}

// NewLayer returns a layer that runs each call in a slot of cfg.Limiter,
// so at most as many calls run at once across every service built with
// that limiter as it allows:
// Max for a [*Limiter], the current Limit for an [*AdaptiveLimiter].
//
// With cfg.Mode [Wait], a call takes its slot with [Limiter.Acquire] or
// [AdaptiveLimiter.Acquire]: one that finds every slot taken waits for one
// in FIFO order; if ctx is done first, the call fails with an error that
// wraps ctx.Err() (so errors.Is(err, context.DeadlineExceeded) or
// context.Canceled holds) and the inner service is not called. An
// AdaptiveLimiter whose [AdaptiveConfig.MaxWaiting] calls already wait
// refuses the call at once with a [*LimitedError]. With cfg.Mode
// [Refuse], a call that finds every slot taken fails at once with a [*LimitedError]
// matching [ErrLimited], whose RetryAfter is 0 for a Limiter (it cannot
// know when a slot frees) and the latest window's average latency for an
// AdaptiveLimiter; refusals share one value (per window, for an
// AdaptiveLimiter), so do not modify it. In either mode a ctx already done
// when the call arrives fails with an error matching ctx.Err() and takes
// no slot.
//
// The slot is held while the inner service runs and given back when it
// returns or panics. Errors from the inner service come back unchanged. A
// call that gets a slot allocates nothing, nor does a Refuse refusal. With
// a [*Limiter], each call takes and gives back a slot of the semaphore,
// which locks its mutex briefly each time: under very high parallelism on
// one Limiter that mutex is the layer's cost (see BenchmarkLayer). With an
// [*AdaptiveLimiter], each call's latency, measured from when it gets its
// slot until the inner service returns or panics, feeds the limiter's
// estimate; a call that fails (an error or a panic) gives its slot back
// with [AdaptiveLimiter.ReleaseFailed], so a failure faster than the
// baseline is no sample.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewLayer returns an error when cfg.Limiter is nil or a zero Limiter or
// AdaptiveLimiter (not made by [New] or [NewAdaptive]), or cfg.Mode is not
// Wait or Refuse.
func NewLayer[Req, Resp any](cfg Config) (rampart.Layer[Req, Resp], error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Observer != nil {
		switch l := cfg.Limiter.(type) {
		case *Limiter:
			l.watchers.Add(cfg.Name, cfg.Observer)
		case *AdaptiveLimiter:
			l.watchers.Add(cfg.Name, cfg.Observer)
		}
	}
	return layer[Req, Resp]{cfg: cfg}, nil
}

// check returns the error NewLayer returns for a bad cfg, or nil.
func (cfg Config) check() error {
	if cfg.Limiter == nil {
		return errors.New("concurrency: limiter must not be nil")
	}
	if err := cfg.Limiter.valid(); err != nil {
		return err
	}
	if cfg.Mode != Wait && cfg.Mode != Refuse {
		return fmt.Errorf("concurrency: mode must be Wait or Refuse, got %v", cfg.Mode)
	}
	return nil
}

// Acquire takes a slot of cfg.Limiter for work that outlives the function
// call that starts it, such as a stream that stays open after the call
// that opened it returns. It takes the slot as a layer built by [NewLayer]
// with cfg takes one for each call (by cfg.Mode and the criticality ctx
// carries), fails with the same errors, and reports the same events to
// cfg.Observer. On success it returns release, which gives the slot back:
// call it when the work ends, however it ends; it is safe to call from any
// goroutine, and calls after the first do nothing. The time an
// [*AdaptiveLimiter]'s slot is held through Acquire is not one of its
// latency samples: how long such work lasts is its caller's choice, not
// the dependency's latency. Acquire returns NewLayer's error for a bad
// cfg. It is the package-level twin of the limiters' own Acquire methods,
// which take a slot without the layer's mode, criticality and events.
func Acquire(ctx context.Context, cfg Config) (release func(), err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := service[struct{}, struct{}]{lim: cfg.Limiter, mode: cfg.Mode, name: cfg.Name, obs: cfg.Observer}
	p, err := s.take(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := cfg.Limiter.(*AdaptiveLimiter); ok {
		p.start = untimed
	}
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			cfg.Limiter.give(p, false)
		}
	}, nil
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
	// give returns the slot p was taken with, for a call that failed or
	// not.
	give(p Permit, failed bool)
	// valid reports a limiter not made by its constructor.
	valid() error
}

type layer[Req, Resp any] struct {
	cfg Config
}

func (l layer[Req, Resp]) Wrap(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
	if nilservice.Is(inner) {
		return rampart.Failing[Req, Resp]("concurrency: Wrap")
	}
	return &service[Req, Resp]{inner: inner, lim: l.cfg.Limiter, mode: l.cfg.Mode, name: l.cfg.Name, obs: l.cfg.Observer}
}

type service[Req, Resp any] struct {
	inner rampart.Service[Req, Resp]
	lim   Slots
	mode  Mode
	name  string
	obs   observe.Observer
}

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	p, err := s.take(ctx)
	if err != nil {
		var zero Resp
		return zero, err
	}
	failed := true // a panic fails the call
	defer func() { s.lim.give(p, failed) }()
	resp, err := s.inner.Call(ctx, req)
	failed = err != nil
	return resp, err
}

// take takes the slot of a call with ctx, reporting to the Observer if
// there is one.
func (s *service[Req, Resp]) take(ctx context.Context) (Permit, error) {
	if s.obs == nil {
		return s.lim.take(ctx, s.mode)
	}
	return s.takeObserved(ctx)
}

// takeObserved is s.lim.take for a layer with an Observer: it reports a
// refusal, and a wait for a slot. It first tries for a slot without
// waiting, so that it reads the clock only for a call that waits.
func (s *service[Req, Resp]) takeObserved(ctx context.Context) (Permit, error) {
	if ctx.Err() != nil {
		return s.lim.take(ctx, s.mode) // the caller's own error: no event
	}
	p, err := s.lim.take(ctx, Refuse)
	if err == nil {
		return p, nil
	}
	e := observe.Event{Source: observe.Concurrency, Name: s.name, Kind: observe.Refused, Err: err}
	if s.mode == Wait {
		start := time.Now()
		p, err = s.lim.take(ctx, Wait)
		e.Duration = time.Since(start)
		if err == nil {
			e.Kind, e.Err = observe.Queued, nil
		} else {
			e.Err = err
		}
	}
	s.obs.Observe(ctx, e)
	return p, err
}
