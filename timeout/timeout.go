package timeout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/observe"
)

// Config configures a timeout layer built by [NewLayer]. Only Timeout
// (or For) is required; every other zero field turns a feature off.
type Config[Req, Resp any] struct {
	// Timeout is the deadline each call gets, measured from when the
	// layer's Call begins. It must be > 0 unless For is set. With For set
	// it is the fallback for requests for which For returns 0, and may be
	// 0, meaning such requests get no deadline from this layer.
	Timeout time.Duration

	// For, when non-nil, chooses each request's timeout (for example from a
	// deadline hint the request carries). A positive result is that
	// request's timeout; 0 means "use Timeout"; a negative result means the
	// request gets no deadline from this layer and is passed straight to
	// the inner service. For is called once per request, on the caller's
	// goroutine, and must be safe for concurrent use. With For set each
	// call whose timeout comes from For allocates one more small object
	// (the context cause carrying that timeout).
	For func(req Req) time.Duration

	// Abandon, when true, runs each inner call on a new goroutine and
	// returns at the deadline (or when the caller's context is done) even if
	// the inner call ignores its context and keeps running. The abandoned
	// goroutine runs until the inner call returns; its late result is
	// passed to Late, or dropped when Late is nil. A panic in an inner call
	// is re-raised on the caller's goroutine while the caller waits, as a
	// [*rampart.PanicError] holding the original panic value and the
	// stack of the goroutine that panicked (which a plain re-panic would
	// lose), which unwraps to the original value when that is an error;
	// it crashes the program, as any unrecovered goroutine panic does, once
	// the call has been abandoned. An inner call that ends with
	// runtime.Goexit (t.FailNow in a test double) makes the waiting caller's
	// goroutine exit too, as x/sync/singleflight does; after abandonment it
	// ends only its own goroutine. The default, false, runs the inner call
	// on the caller's goroutine and starts no goroutine: a call that
	// ignores its context then holds the caller until it returns.
	Abandon bool

	// Late, when non-nil, receives the result of every call that Abandon
	// gave up on, on the abandoned goroutine, once the inner call returns.
	// Use it to release what the response holds (close an HTTP body). It
	// must be safe for concurrent use. Setting Late without Abandon is an
	// error.
	Late func(resp Resp, err error)

	// Detach, when non-nil, is called when the inner call succeeds (nil
	// error) and hands the call's context over to the response: instead of
	// cancelling the context when Call returns, the layer passes its cancel
	// func to Detach, and returns the response Detach returns. Detach must
	// make sure cancel is eventually called (cancel is idempotent and safe
	// from any goroutine); until then the context stays alive, and its
	// deadline still fires at the layer's deadline. This is for responses
	// that are still being read after Call returns: an HTTP response body
	// reads through the request's context, so ramparthttp wraps the body
	// to call cancel at Body.Close. Without Detach, cancel runs before Call
	// returns. Detach is not called for requests that get no context from
	// this layer (see For, and a caller deadline that is not later than the
	// layer's); it must be safe for concurrent use.
	Detach func(resp Resp, cancel context.CancelFunc) Resp

	// Name names the layer in its events. Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each call the layer's deadline
	// ends (an [observe.TimeoutFired] event with the timeout, each time the
	// layer returns an [*Error]). See package observe.
	Observer observe.Observer

	// Clock, when set, is the time the deadline runs on, so calls can be
	// replayed on virtual time (see package sim): the deadline is the
	// clock's monotonic reading at the start of Call plus the timeout, and
	// the inner call's context is cancelled by a timer of the clock
	// (clock.AfterFunc) with the same cause, an [*Error], when it passes.
	// The layer answers as without a Clock, with two differences. The
	// inner context has no Deadline (its Err is [context.Canceled] once
	// the clock's deadline passes, with the *Error as its cause: read
	// [context.Cause]), since a deadline on the supplied clock is no time
	// on the system's; an inner call that returns that context.Canceled
	// is reported as if it had returned [context.DeadlineExceeded]. And
	// the caller's deadline, which is system time, is not compared with
	// the layer's: the layer always sets its own, and a call whose
	// caller's context is done is still reported as the caller's. Nil
	// means the system's clock and [context.WithDeadlineCause]. Each call
	// allocates the context, the clock's timer and its function.
	Clock clock.Clock
}

// NewLayer validates cfg and returns a timeout layer.
//
// Each call through the layer runs the inner service with a context whose
// deadline is the layer's timeout after Call began and whose cause
// ([context.Cause]) is an [*Error]. The layer then answers as follows.
//
//   - The inner call returned a nil error: its response is returned, even if
//     the deadline passed meanwhile. A success is never turned into a
//     timeout, so no result is lost.
//   - The inner call returned an error, the caller's context is not done,
//     and the layer's deadline has passed: the layer returns
//     &Error{After, Err: the inner error} (Err is nil when the inner
//     error is the context's cause itself), which matches [ErrTimeout],
//     [context.DeadlineExceeded] and the inner error with [errors.Is]. The
//     deadline is judged by the clock, so an error returned at the very
//     instant of the deadline is a timeout whether or not the context's
//     timer has run yet.
//   - Otherwise (an error before the deadline, or the caller's context is
//     done): the inner error and response are returned unchanged. The
//     caller's own deadline or cancellation is thus reported as the
//     caller's (ctx.Err() and cause, as the inner service returned them),
//     never as ErrTimeout, even when both deadlines have passed.
//
// When the caller's deadline is not later than the layer's (including the
// same instant), the layer adds nothing: it passes the caller's context to
// the inner service, so any expiry is the caller's. This makes the answer
// deterministic when the two deadlines coincide.
//
// In Abandon mode a call still running at the deadline is abandoned: the
// layer returns a zero Resp and &Error{After} (Err nil), or, when the
// caller's context is done, the caller's ctx.Err() (wrapped with its cause
// when the caller gave one). A result that arrives at the same instant as
// the deadline is either returned or abandoned (and passed to Late); it is
// never lost.
//
// With [Config.Clock] set, the deadline runs on that clock; Config.Clock
// says what changes.
//
// Cost: each call allocates what [context.WithDeadlineCause] allocates (a
// timer context and its timer); the layer adds no allocation of its own in
// the default mode with a fixed Timeout. See BenchmarkTimeoutLayer.
//
// The layer, and every service it wraps, is safe for concurrent use; one
// layer may wrap many services.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewLayer returns an error naming the field when Timeout is not > 0
// without For, when Timeout is negative, or when Late is set without
// Abandon. The zero Config is thus an error: it sets no timeout.
func NewLayer[Req, Resp any](cfg Config[Req, Resp]) (rampart.Layer[Req, Resp], error) {
	switch {
	case cfg.For == nil && cfg.Timeout <= 0:
		return nil, fmt.Errorf("timeout: Timeout must be > 0, got %v", cfg.Timeout)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("timeout: Timeout must be >= 0 when For is set (0 means no deadline where For returns 0), got %v", cfg.Timeout)
	case cfg.Late != nil && !cfg.Abandon:
		return nil, errors.New("timeout: Late must be nil unless Abandon is true")
	case nilvalue.Is(cfg.Clock):
		return nil, nilvalue.Field("timeout: Clock", cfg.Clock)
	}
	plain := cfg.For == nil && cfg.Clock == nil && !cfg.Abandon && cfg.Detach == nil
	return &layer[Req, Resp]{cfg: cfg, cause: &Error{After: cfg.Timeout}, plain: plain}, nil
}

// layer is the [rampart.Layer] that NewLayer returns.
type layer[Req, Resp any] struct {
	cfg Config[Req, Resp]
	// cause is the context cause for calls that use cfg.Timeout, shared by
	// all of them so that such calls allocate nothing for it. It is never
	// modified after NewLayer.
	cause *Error
	// plain is true when cfg sets only Timeout: every call then takes
	// the same path, without per-call decisions.
	plain bool
}

// Wrap returns a service that runs inner with the layer's deadline, or,
// when inner is nil, one that fails every call with an error matching
// [rampart.ErrNilService].
func (l *layer[Req, Resp]) Wrap(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
	if nilservice.Is(inner) {
		return rampart.Failing[Req, Resp]("timeout: Wrap")
	}
	return &service[Req, Resp]{l: l, inner: inner}
}

// service is the [rampart.Service] that layer.Wrap returns.
type service[Req, Resp any] struct {
	l     *layer[Req, Resp]
	inner rampart.Service[Req, Resp]
}

// bounds is what one call needs to judge its outcome.
type bounds struct {
	timeout  time.Duration
	deadline time.Time
	cause    *Error
	// clk is the supplied clock, and due the deadline on its monotonic
	// reading; deadline is unset then.
	clk clock.Clock
	due time.Duration
	// first is false when the caller's deadline is not later than the
	// layer's: the layer's deadline can then never be the one that ends
	// the call.
	first bool
}

// Call runs the inner call with the layer's deadline; [NewLayer] documents the
// answer it gives.
func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if s.l.plain {
		// The common configuration (a fixed Timeout on the system's
		// clock, no For, Abandon or Detach), with nothing to decide per
		// call: what follows, less the branches it does not take.
		deadline := time.Now().Add(s.l.cfg.Timeout)
		if cur, ok := ctx.Deadline(); ok && !cur.After(deadline) {
			return s.inner.Call(ctx, req)
		}
		tctx, cancel := context.WithDeadlineCause(ctx, deadline, s.l.cause)
		defer cancel() // also if the inner call panics
		resp, err := s.inner.Call(tctx, req)
		if err != nil {
			b := bounds{timeout: s.l.cfg.Timeout, deadline: deadline, cause: s.l.cause, first: true}
			return resp, s.judge(ctx, &b, err)
		}
		return resp, nil
	}
	return s.callConfigured(ctx, req)
}

// callConfigured is Call for every configuration but the plain one. (In
// a function of its own: with the plain path's returns, Call would have
// too many returns for the compiler to open-code the defers, and each
// would cost a call into the runtime.)
func (s *service[Req, Resp]) callConfigured(ctx context.Context, req Req) (Resp, error) {
	b := bounds{timeout: s.l.cfg.Timeout, cause: s.l.cause, first: true}
	if s.l.cfg.For != nil {
		if d := s.l.cfg.For(req); d != 0 {
			b.timeout, b.cause = d, &Error{After: d}
		}
	}
	if b.timeout <= 0 {
		return s.inner.Call(ctx, req)
	}
	if b.clk = s.l.cfg.Clock; b.clk != nil {
		b.due = b.clk.Monotonic() + b.timeout
	} else {
		b.deadline = time.Now().Add(b.timeout)
	}
	if cur, ok := ctx.Deadline(); ok && b.clk == nil && !cur.After(b.deadline) {
		b.first = false
		if !s.l.cfg.Abandon {
			return s.inner.Call(ctx, req)
		}
	}
	if s.l.cfg.Abandon {
		return s.callAbandon(ctx, req, b)
	}

	tctx, cancel := b.context(ctx)
	detached := false
	defer func() {
		// Also runs if the inner call panics, so the timer is released.
		if !detached {
			cancel()
		}
	}()
	resp, err := s.inner.Call(tctx, req)
	if err != nil {
		return resp, s.judge(ctx, &b, err)
	}
	if s.l.cfg.Detach != nil {
		resp = s.l.cfg.Detach(resp, cancel)
		detached = true
	}
	return resp, nil
}

// context returns the inner call's context: with the layer's deadline on
// the system's clock (context.WithDeadlineCause, with the deadline computed
// in Call), or cancelled with the same cause by a timer of the supplied
// clock.
func (b *bounds) context(parent context.Context) (context.Context, context.CancelFunc) {
	if b.clk == nil {
		return context.WithDeadlineCause(parent, b.deadline, b.cause)
	}
	ctx, cancel := context.WithCancelCause(parent)
	cause := b.cause
	t := b.clk.AfterFunc(b.timeout, func() { cancel(cause) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// passed reports whether the layer's deadline has passed.
func (b *bounds) passed() bool {
	if b.clk != nil {
		return b.clk.Monotonic() >= b.due
	}
	return !time.Now().Before(b.deadline)
}

// judge returns the error the layer reports for an inner error err: a
// timeout when the layer's deadline has passed and the caller's context is
// not done, err unchanged otherwise.
func (s *service[Req, Resp]) judge(parent context.Context, b *bounds, err error) error {
	if !b.first || parent.Err() != nil || !b.passed() {
		return err
	}
	switch {
	case err == error(b.cause):
		err = nil
	case b.clk != nil && err == context.Canceled:
		// The clock's timer cancelled the context: report what a context
		// deadline would have.
		err = context.DeadlineExceeded
	}
	s.l.fired(parent, b.timeout)
	return &Error{After: b.timeout, Err: err}
}

// fired reports that the layer's deadline d ended a call.
func (l *layer[Req, Resp]) fired(ctx context.Context, d time.Duration) {
	if l.cfg.Observer != nil {
		l.cfg.Observer.Observe(ctx, observe.Event{Source: observe.Timeout, Name: l.cfg.Name, Kind: observe.TimeoutFired, Duration: d})
	}
}
