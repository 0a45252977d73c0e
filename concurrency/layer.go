package concurrency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

// Config configures a layer built by [NewConfigLayer] or [WrapConfig]:
// the arguments of [NewLayer], and a Name and an Observer for its events.
type Config struct {
	// Limiter is the limiter whose slots the layer's calls take. It must
	// be made by [New].
	Limiter *Limiter

	// Mode says what a call does when every slot is taken: [Wait] (the
	// zero Mode) or [Reject].
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

// NewLayer returns a layer that runs each call in a slot of l, so at most
// l.Max() calls run at once across every service built with l.
//
// With mode [Wait], a call takes its slot with [Limiter.Acquire]: one that
// finds every slot taken waits for one in FIFO order; if ctx is done
// first, the call fails with an error that wraps ctx.Err() (so
// errors.Is(err, context.DeadlineExceeded) or context.Canceled holds) and
// the inner service is not called. With mode [Reject], such a call fails
// at once with a [*LimitedError] matching [ErrLimited], whose RetryAfter
// is 0 (a Limiter cannot know when a slot frees); the same value is
// returned for every refusal by l, so do not modify it. In either mode a
// ctx already done when the call arrives fails with an error matching
// ctx.Err() and takes no slot.
//
// The slot is held while the inner service runs and given back when it
// returns or panics. Errors from the inner service come back unchanged. A
// call that gets a slot allocates nothing, nor does a Reject refusal. Each
// call takes and gives back a slot of the semaphore, which locks its mutex
// briefly each time: under very high parallelism on one Limiter that mutex
// is the layer's cost (see BenchmarkLayer).
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewLayer returns an error when l is nil, l is a zero Limiter (not made by
// [New]), or mode is not Wait or Reject.
func NewLayer[Req, Resp any](l *Limiter, mode Mode) (rampart.Layer[Req, Resp], error) {
	return NewConfigLayer[Req, Resp](Config{Limiter: l, Mode: mode})
}

// NewConfigLayer returns the layer [NewLayer] returns for cfg.Limiter and
// cfg.Mode, reporting its events to cfg.Observer. It returns the errors
// NewLayer returns.
func NewConfigLayer[Req, Resp any](cfg Config) (rampart.Layer[Req, Resp], error) {
	if cfg.Limiter == nil {
		return nil, errors.New("concurrency: limiter must not be nil")
	}
	if cfg.Limiter.sem == nil {
		return nil, errors.New("concurrency: limiter must be made by New, got a zero Limiter")
	}
	if cfg.Mode != Wait && cfg.Mode != Reject {
		return nil, fmt.Errorf("concurrency: mode must be Wait or Reject, got %d", cfg.Mode)
	}
	return layer[Req, Resp]{cfg: cfg}, nil
}

// WrapConfig wraps svc in the layer [NewConfigLayer] returns, inferring
// the type parameters from svc. It returns the errors NewConfigLayer
// returns, and an error matching [rampart.ErrNilService] when svc is nil.
func WrapConfig[Req, Resp any](svc rampart.Service[Req, Resp], cfg Config) (rampart.Service[Req, Resp], error) {
	l, err := NewConfigLayer[Req, Resp](cfg)
	return wrap.Service("concurrency", svc, l, err)
}

// Wrap wraps svc in the layer [NewLayer] returns, inferring the type
// parameters from svc. It returns the errors [NewLayer] returns, and an
// error matching [rampart.ErrNilService] when svc is nil.
func Wrap[Req, Resp any](svc rampart.Service[Req, Resp], lim *Limiter, mode Mode) (rampart.Service[Req, Resp], error) {
	l, err := NewLayer[Req, Resp](lim, mode)
	return wrap.Service("concurrency", svc, l, err)
}

type layer[Req, Resp any] struct {
	cfg Config
}

func (l layer[Req, Resp]) Wrap(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
	if inner == nil {
		return rampart.Failing[Req, Resp]("concurrency: Wrap")
	}
	return &service[Req, Resp]{inner: inner, lim: l.cfg.Limiter, mode: l.cfg.Mode, name: l.cfg.Name, obs: l.cfg.Observer}
}

type service[Req, Resp any] struct {
	inner rampart.Service[Req, Resp]
	lim   *Limiter
	mode  Mode
	name  string
	obs   observe.Observer
}

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if err := s.acquire(ctx); err != nil {
		var zero Resp
		return zero, err
	}
	defer s.lim.Release()
	return s.inner.Call(ctx, req)
}

// acquire takes a slot as the mode says: in Wait mode it blocks until a
// slot frees or ctx is done; in Reject mode it fails at once with the
// limiter's shared refusal. A ctx already done takes no slot, in either
// mode.
func (s *service[Req, Resp]) acquire(ctx context.Context) error {
	if s.mode == Wait {
		if s.obs == nil || ctx.Err() != nil {
			return s.lim.Acquire(ctx)
		}
		if s.lim.TryAcquire() {
			return nil
		}
		start := time.Now()
		err := s.lim.Acquire(ctx)
		e := observe.Event{Source: observe.Concurrency, Name: s.name, Kind: observe.Queued, Duration: time.Since(start)}
		if err != nil {
			e.Kind, e.Err = observe.Refused, err
		}
		s.obs.Observe(ctx, e)
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.lim.TryAcquire() {
		if s.obs != nil {
			s.obs.Observe(ctx, observe.Event{Source: observe.Concurrency, Name: s.name, Kind: observe.Refused, Err: s.lim.limited})
		}
		return s.lim.limited
	}
	return nil
}
