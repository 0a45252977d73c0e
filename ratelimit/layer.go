package ratelimit

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/mode"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/observe"
)

// Mode says what a call does when the limiter has no token for it now:
// [Wait] or [Refuse]. Package concurrency's Mode is the same type, so one
// value configures both kinds of limit. Its String method returns "Wait",
// "Refuse", or "Mode(n)" for any other value.
type Mode = mode.Mode

const (
	// Wait blocks the call until its token is due, unless the token would
	// arrive at or after the context's deadline: then the call is refused
	// at once with a [*LimitedError] whose PastDeadline is true. Waiting
	// calls are served in the order they arrived. Wait is the zero Mode.
	Wait = mode.Wait
	// Refuse refuses the call at once with a [*LimitedError] and takes no
	// token.
	Refuse = mode.Refuse
)

func checkMode(m Mode) error {
	if m != Wait && m != Refuse {
		return fmt.Errorf("ratelimit: mode must be Wait or Refuse, got %v", m)
	}
	return nil
}

// NewLayer returns a layer that takes one token from cfg.Limiter (lim
// below) before each call. lim is used as it is and may be shared with
// other layers and code: they all draw from the same bucket, and changes
// made with [Tune] (or lim.SetLimit, lim.SetBurst) apply at once.
//
// When lim has no token for a call now, cfg.Mode decides: [Wait] waits for
// the token (refusing at once if it would arrive at or after ctx's deadline),
// [Refuse] refuses at once. In either mode a call is refused at once when
// lim can never grant a token (a burst of 0, or a limit of 0 with the burst
// spent). A refusal is a [*LimitedError] matching
// [ErrLimited], and the inner service is not called. A ctx already done
// when the call arrives fails with ctx.Err() and takes no token. Errors
// from the inner service come back unchanged.
//
// # Waiting
//
// The calls waiting through one layer form a line, served in the order
// they arrived. Only the first holds a reservation on lim; the others
// reserve nothing until it is their turn. If ctx is done while a call
// waits, the call fails with an error wrapping ctx.Err(), and if it was
// first in line its token is given back to lim, so the next call in line
// reserves after it and is due that much earlier. (Letting every waiter
// reserve at once would not allow this: a [rate.Reservation] cannot give
// back tokens that later reservations have already counted on.) A call
// that joins the line is refused at once, PastDeadline true, when the
// token it would get after every call ahead of it has taken its own is
// due at or after its deadline; it is checked again when its turn comes.
// The line is the layer's own: callers that draw from lim elsewhere (other
// layers, lim.Wait) are not in it, and a token given back while they hold
// later reservations returns only in part.
//
// In [Refuse] mode a call is refused while the line is not empty, with the
// RetryAfter a call joining the line would wait for.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// A call that finds a token free and nobody waiting allocates nothing; a
// call that waits or is refused allocates its place in line, reservation
// and error.
//
// NewLayer returns an error when cfg.Limiter is nil, cfg.Mode is not
// Wait or Refuse, or cfg.Clock is not the Clock of the layers built with
// cfg.Limiter before (nil, the system's clock, included). A zero [rate.Limiter] is valid and refuses every call,
// as x/time/rate documents.
func NewLayer[Req, Resp any](cfg Config) (rampart.Layer[Req, Resp], error) {
	if cfg.Limiter == nil {
		return nil, errors.New("ratelimit: limiter must not be nil")
	}
	if err := checkMode(cfg.Mode); err != nil {
		return nil, err
	}
	if err := nilvalue.Field("ratelimit: Clock", cfg.Clock); err != nil {
		return nil, err
	}
	if err := register(cfg.Limiter, cfg.Clock, cfg.Name, cfg.Observer); err != nil {
		return nil, err
	}
	q := &queue{lim: cfg.Limiter, clk: cfg.Clock}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		if nilservice.Is(inner) {
			return rampart.Failing[Req, Resp]("ratelimit: Wrap")
		}
		return &service[Req, Resp]{inner: inner, q: q, mode: cfg.Mode, name: cfg.Name, obs: cfg.Observer}
	}), nil
}

// Config configures a layer built by [NewLayer]; its Name and Observer
// are for the layer's events.
type Config struct {
	// Limiter is the token bucket the layer's calls draw from, used as
	// [NewLayer] says. It must not be nil.
	Limiter *rate.Limiter

	// Mode says what a call does when no token is free now: [Wait] (the
	// zero Mode) or [Refuse].
	Mode Mode

	// Name names the layer in its events. Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each call the layer refuses (an
	// [observe.Refused] event with the [*LimitedError] or context error
	// returned and how long the call waited) and each call that waited for
	// its token (an [observe.Queued] event with the wait). A call that
	// finds a token free reports nothing. See package observe.
	Observer observe.Observer

	// Clock, when set, is the time the layer runs on, so it can be
	// replayed on virtual time: the times it passes to Limiter (AllowN,
	// ReserveN, CancelAt) are made of the clock's monotonic readings
	// alone, so a step of its wall reading moves no token, and the first
	// waiting call waits with [clock.Sleep]. Limiter must then be used
	// only through layers with the same Clock (its own Allow and Wait read
	// the system's clock): NewLayer refuses a Clock other than the one
	// the layers built with Limiter before have (nil included). The caller's deadline, which is system time,
	// is not compared with a token's due time: a call is not refused with
	// PastDeadline, it waits until its token or its context ends. Nil
	// means the system's clock, read directly.
	Clock clock.Clock
}

type service[Req, Resp any] struct {
	inner rampart.Service[Req, Resp]
	q     *queue
	mode  Mode
	name  string
	obs   observe.Observer
}

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if err := take(ctx, s.q, s.mode, s.name, s.obs); err != nil {
		var zero Resp
		return zero, err
	}
	return s.inner.Call(ctx, req)
}
