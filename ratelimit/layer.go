package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
)

// Mode says what a call does when the limiter has no token for it now.
type Mode int

const (
	// Wait blocks the call until its token is due, unless the token would
	// arrive at or after the context's deadline: then the call is refused
	// at once with a [*LimitedError] whose PastDeadline is true. Waiting
	// calls are served in the order they reserved their tokens. Wait is
	// the zero Mode.
	Wait Mode = iota
	// Reject refuses the call at once with a [*LimitedError] and takes no
	// token.
	Reject
)

func checkMode(m Mode) error {
	if m != Wait && m != Reject {
		return fmt.Errorf("ratelimit: mode must be Wait or Reject, got %d", m)
	}
	return nil
}

// NewLayer returns a layer that takes one token from lim before each call.
// lim is used as it is and may be shared with other layers and code: they
// all draw from the same bucket, and changes made with lim.SetLimit or
// lim.SetBurst apply at once.
//
// When lim has no token for a call now, mode decides: [Wait] waits for the
// token (refusing at once if it would arrive at or after ctx's deadline),
// [Reject] refuses at once. In either mode a call is refused at once when
// lim can never grant a token (a burst of 0, or a limit of 0 with the burst
// spent). A refusal is a [*LimitedError] matching
// [ErrLimited], and the inner service is not called. If ctx is done while
// the call waits, the call fails with an error wrapping ctx.Err() and its
// token is given back. A ctx already done when the call arrives fails with
// ctx.Err() and takes no token. Errors from the inner service come back
// unchanged.
//
// A call that finds a token free allocates nothing; a call that waits or is
// refused allocates its reservation and error.
//
// NewLayer returns an error when lim is nil or mode is not Wait or Reject.
func NewLayer[Req, Resp any](lim *rate.Limiter, mode Mode) (rampart.Layer[Req, Resp], error) {
	if lim == nil {
		return nil, errors.New("ratelimit: limiter must not be nil")
	}
	if err := checkMode(mode); err != nil {
		return nil, err
	}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		return &service[Req, Resp]{inner: inner, lim: lim, mode: mode}
	}), nil
}

// Wrap wraps svc in the layer [NewLayer] returns, inferring the type
// parameters from svc. It returns the errors [NewLayer] returns.
func Wrap[Req, Resp any](svc rampart.Service[Req, Resp], lim *rate.Limiter, mode Mode) (rampart.Service[Req, Resp], error) {
	l, err := NewLayer[Req, Resp](lim, mode)
	if err != nil {
		return nil, err
	}
	return l.Wrap(svc), nil
}

type service[Req, Resp any] struct {
	inner rampart.Service[Req, Resp]
	lim   *rate.Limiter
	mode  Mode
}

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if err := take(ctx, s.lim, s.mode); err != nil {
		var zero Resp
		return zero, err
	}
	return s.inner.Call(ctx, req)
}

// take takes one token from lim for a call, as [NewLayer] documents.
func take(ctx context.Context, lim *rate.Limiter, mode Mode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Allow neither allocates nor changes lim when it fails, so it is the
	// fast path; only a call that must wait or be refused reserves.
	if lim.Allow() {
		return nil
	}
	now := time.Now()
	r := lim.ReserveN(now, 1)
	delay := r.DelayFrom(now) // rate.InfDuration if r is not OK
	if delay == 0 {
		return nil // a token came due between Allow and ReserveN
	}
	if delay == rate.InfDuration {
		// No token will ever come (a burst of 0, or a limit of 0 with the
		// burst spent): refuse in either mode rather than wait forever.
		r.CancelAt(now)
		return &LimitedError{RetryAfter: rate.InfDuration}
	}
	if mode == Reject {
		r.CancelAt(now)
		return &LimitedError{RetryAfter: delay}
	}
	if deadline, ok := ctx.Deadline(); ok && delay >= deadline.Sub(now) {
		r.CancelAt(now)
		return &LimitedError{RetryAfter: delay, PastDeadline: true}
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		// Give the token back so the calls queued behind this one move up.
		r.Cancel()
		return fmt.Errorf("ratelimit: waiting for a token: %w", ctx.Err())
	}
}
