package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/ctxcheck"
	"github.com/rampart-go/rampart/internal/ctxerr"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/observe"
)

// Budget bounds retries to a share of recent traffic. The layer calls
// Deposit once per request that it attempts (not for a request whose
// context is already done), before the first attempt, and Withdraw once
// before each retry; a false Withdraw stops the loop with
// [ErrBudgetExhausted]. Both must be safe for concurrent use and cheap:
// Deposit runs on every call, between the layer's check of the context
// and the first attempt, which a circuit breaker below then admits
// without checking the context again, so Deposit must not block.
// [*github.com/rampart-go/rampart/budget.Budget] implements it, as do
// budget.Always and budget.Never; all three are also [Refunder]s.
type Budget interface {
	Deposit()
	Withdraw() bool
}

// Refunder is implemented by a [Budget] that can take back a withdrawal.
// The budget pays only for retries that were sent: when a Budget is also a
// Refunder, the layer calls Refund once for each successful Withdraw whose
// retry it did not send, because the caller's context ended during the
// wait before it, or because a layer below refused it (the attempt failed
// with an error matching [rampart.ErrRefused]: an open breaker, a limit). A
// Budget that is not a Refunder keeps such withdrawals. Refund must be
// safe for concurrent use and must not block.
type Refunder interface {
	Refund()
}

// Defaults for the zero fields of [Config].
const (
	// DefaultMaxAttempts allows one call and two retries: most transient
	// faults clear within two retries, and each extra attempt multiplies the
	// load a failing dependency receives.
	DefaultMaxAttempts = 3
	// DefaultMaxHint caps a server's retry-after hint. A hint longer than a
	// minute is almost certainly not meant for a caller waiting inside one
	// request; the cap keeps a bogus header from parking a goroutine for
	// hours. The context's deadline still stops the loop earlier.
	DefaultMaxHint = time.Minute
)

// MaxAttemptsLimit is the largest Config.MaxAttempts accepted; a larger
// value is an error, not clamped (the same rule as hedge.MaxAttemptsLimit).
// A hundred attempts span more than a quarter of an hour with the default
// backoff: a larger count is almost always a mistake, such as a number of
// milliseconds. To retry until the deadline, pass MaxAttemptsLimit and let
// the context and the Budget stop the loop.
const MaxAttemptsLimit = 100

// defaultBackoff is the schedule used when Config.Backoff is nil.
var defaultBackoff, _ = NewExponential(Exponential{})

// Config configures the retry layer. Every zero field takes its documented
// default. A Config is read once by [NewLayer]; changing it later
// has no effect.
type Config[Req, Resp any] struct {
	// MaxAttempts bounds the number of calls per request, including the
	// first: 3 means one call and at most two retries. Zero means
	// [DefaultMaxAttempts]; otherwise it must be between 1 and
	// [MaxAttemptsLimit]. 1 disables retries: the
	// layer then only deposits into Budget (so a layer that does not retry
	// still earns retries for those that share the budget) and returns the
	// inner outcome unchanged, never an [*ExhaustedError]; a call whose
	// context is already done is still not made.
	MaxAttempts int

	// Backoff gives the delay before each retry. Nil means exponential
	// backoff with full jitter from 100ms, doubling, capped at 10s
	// ([NewExponential] with a zero [Exponential]). A nil [BackoffFunc] or
	// nil pointer is an error. A negative delay from a custom schedule is
	// treated as zero.
	Backoff Backoff

	// Retryable reports whether an attempt's outcome is worth retrying.
	// It sees every outcome, successes included, so a response can
	// ask for a retry (an HTTP 503, say) with a nil error; a first
	// attempt's outcome is judged before the layer reads its attempts, so
	// it is asked even when MaxAttempts is 1. Nil means "retry
	// every non-nil error". Whatever it returns, the layer never retries an
	// error matching [rampart.ErrOpen] or [rampart.ErrNilService] (a layer
	// below wired to a nil service fails every attempt alike), an error
	// marked with [Permanent], or any outcome once the caller's context is
	// done. It
	// must be safe for concurrent use.
	Retryable func(resp Resp, err error) bool

	// Budget bounds retries across all requests that share it: see
	// [Budget] and [Refunder]. Nil means a budget of the layer's own with
	// package budget's defaults (20% of recent requests plus 10 retries a
	// second, on Clock), made by [NewLayer] and shared by every
	// service that layer wraps, so a retrying client never multiplies its
	// load by MaxAttempts during an outage. Share one *budget.Budget among
	// the layers that call one dependency; set [budget.Always] to retry
	// with no budget, bounded only by MaxAttempts and the context. A typed
	// nil pointer (a nil *budget.Budget) is an error.
	Budget Budget

	// Hint, if not nil, extracts a server's retry-after hint from an
	// outcome, such as an HTTP Retry-After header on a 429 or 503 response;
	// ok reports whether there is one. Independently, a [rampart.Hint] in
	// the outcome's error chain (such as a rate limiter's
	// *ratelimit.LimitedError from a layer below) is a hint too; an open
	// breaker's refusal has one as well, but it is never retried, so its
	// hint ends nothing. The longest hint
	// replaces the backoff delay when it is longer. A hint of [rampart.Forever]
	// ends the loop at once. It must be safe for concurrent use.
	Hint func(resp Resp, err error) (delay time.Duration, ok bool)

	// MaxHint caps hints: a longer hint is shortened to MaxHint, except
	// [rampart.Forever], which is never waited out; a negative hint counts as zero.
	// Zero means [DefaultMaxHint]; negative is an error. It does not cap the
	// Backoff schedule, which has its own.
	MaxHint time.Duration

	// Discard, if not nil, is called with the response of an attempt that
	// is about to be retried, just before the next attempt starts, since
	// nobody else will ever see it: the HTTP adapter closes the body
	// there. It may receive the zero Resp (the attempt failed with an
	// error and no response). A response the layer returns is never
	// discarded.
	Discard func(resp Resp)

	// Name names the layer in its events. Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each retry (an
	// [observe.Retrying] event, before the wait: the attempt it is about to
	// make, the delay and the failure being retried) and about the end of
	// every loop that wanted a retry or met an open circuit breaker (an
	// [observe.RetryEnd] event: the attempts made and why it stopped). A
	// call that succeeds at once reports nothing. See package observe.
	Observer observe.Observer

	// Tuner, when set, holds MaxAttempts and Backoff instead, so that
	// they can change while the layer runs ([Tuner.Tune]); both fields
	// must then be zero. Nil means the layer's own, fixed, settings.
	Tuner *Tuner

	// Clock, when set, times the waits between attempts: each wait is
	// [clock.Sleep] on it, so retries can be replayed on virtual time (see
	// package sim). A context's deadline is system time whatever the
	// Clock: with a Clock set, the layer does not compare a wait with the
	// context's deadline (it cannot: the two run on different clocks) and
	// never stops with [ErrDeadline]; the wait still ends when the
	// context is done. Nil means the system's clock, with a timer per
	// call as described on [NewLayer].
	Clock clock.Clock
}

// policy is a validated Config with its defaults filled in, shared by every
// service a layer wraps.
type policy[Req, Resp any] struct {
	// tuner holds MaxAttempts and Backoff: Config.Tuner, or the layer's
	// own. Read only when a first attempt wants a retry.
	tuner     *Tuner
	retryable func(Resp, error) bool
	budget    Budget   // never nil: newPolicy makes a default one
	refunder  Refunder // budget as a Refunder, or nil
	hint      func(Resp, error) (time.Duration, bool)
	maxHint   time.Duration
	discard   func(Resp)
	clock     clock.Clock
	name      string
	obs       observe.Observer
}

func newPolicy[Req, Resp any](cfg Config[Req, Resp]) (*policy[Req, Resp], error) {
	if err := nilvalue.Field("retry: Clock", cfg.Clock); err != nil {
		return nil, err
	}
	p := &policy[Req, Resp]{
		tuner:     cfg.Tuner,
		retryable: cfg.Retryable,
		budget:    cfg.Budget,
		hint:      cfg.Hint,
		maxHint:   cfg.MaxHint,
		discard:   cfg.Discard,
		clock:     cfg.Clock,
		name:      cfg.Name,
		obs:       observe.Bind(cfg.Observer, observe.Retry, cfg.Name),
	}
	switch {
	case p.maxHint < 0:
		return nil, fmt.Errorf("retry: MaxHint must be 0 (the default, %v) or positive, got %v", DefaultMaxHint, p.maxHint)
	case p.maxHint == 0:
		p.maxHint = DefaultMaxHint
	}
	switch {
	case cfg.Tuner == nil:
		t, err := NewTuner(Settings{MaxAttempts: cfg.MaxAttempts, Backoff: cfg.Backoff})
		if err != nil {
			return nil, err
		}
		p.tuner = t
	case cfg.MaxAttempts != 0 || cfg.Backoff != nil:
		return nil, fmt.Errorf("retry: MaxAttempts and Backoff must be zero with a Tuner, which holds them; got MaxAttempts %d, Backoff %T", cfg.MaxAttempts, cfg.Backoff)
	default:
		if p.obs != nil {
			cfg.Tuner.watchers.Add(cfg.Name, p.obs)
		}
	}
	switch {
	case p.budget == nil:
		b, err := budget.New(budget.Config{Clock: cfg.Clock})
		if err != nil {
			return nil, fmt.Errorf("retry: the default Budget: %w", err)
		}
		p.budget = b
	case nilvalue.Is(p.budget):
		return nil, fmt.Errorf("retry: Budget must not be a nil pointer, got %T(nil)", p.budget)
	}
	p.refunder, _ = p.budget.(Refunder)
	return p, nil
}

// NewLayer returns a layer that retries failed calls as cfg says.
// The layer and the services it wraps are safe for concurrent use when
// cfg's functions and Budget are.
//
// It returns an error naming the field if MaxAttempts is negative or above
// [MaxAttemptsLimit], MaxHint is negative, Backoff is a nil [BackoffFunc] or nil pointer, or Budget is a
// nil pointer.
//
// # Outcomes
//
// A call through the layer returns:
//   - when ctx is already done as the call starts: the zero Resp and the
//     context's error, wrapped together with its cause when
//     [context.WithCancelCause] or similar gave a different one; no
//     attempt is made and the Budget sees neither a deposit nor a
//     withdrawal;
//   - the first outcome that is not retried, as the inner service returned
//     it: a success, a response or error for which Retryable returns
//     false, a [Permanent] error, or an error matching
//     [rampart.ErrOpen], which is never wrapped, even after earlier
//     failures: its circuitbreaker.OpenError.Cause carries the
//     failure that tripped the breaker;
//   - when the loop stops on a response Retryable wanted retried (nil
//     error), that last response and a nil error: the caller sees the real
//     result, such as the last 503;
//   - when the loop stops on an error it wanted to retry, the last
//     response (as the inner service returned it, often the zero value) and
//     an [*ExhaustedError] wrapping the last error with the reason: attempts
//     used up ([ErrMaxAttempts]), budget empty ([ErrBudgetExhausted]), the
//     next attempt could not start before the deadline ([ErrDeadline]), a
//     hint of [rampart.Forever] ([ErrHintForever]), the request is already a
//     retry upstream ([ErrUpstreamRetry], below), or the context ended
//     during the wait (its error and cause);
//   - when the caller's context ends during an attempt and the attempt
//     returns the context's error: that error as is if it was the first
//     attempt, or else an [*ExhaustedError] wrapping the last earlier
//     failure with the context's error as the reason, so a real failure
//     is never replaced by the caller's cancellation.
//
// # Retries across hops
//
// Each retry is sent with a context that says which attempt it is
// ([rampart.WithAttempt]: 2 for the first retry), which the HTTP and gRPC
// adapters send to the next hop; the first attempt goes with ctx as
// given. A call whose ctx already says its request is a retry
// ([rampart.AttemptOf] above 1: a server adapter put there the attempt a
// trusted peer sent) makes one attempt and never retries, stopping with
// [ErrUpstreamRetry]: the hop that retried owns the retries, and its
// retry reaches every hop below as one attempt each, instead of as many
// attempts as every hop allows multiplied together (3 retries at each of
// three hops: 4 × 4 × 4 = 64 attempts at the last). The first attempt of
// each hop may still be retried by that hop, so, when every hop fails,
// the attempts at the hop d levels below the first retrying one are at
// most 1 + d × (MaxAttempts − 1) per request (10, not 64, for the chain
// above), and each hop's retry budget bounds its own share.
//
// # Time
//
// The layer waits with a timer and a select on ctx.Done, so it never sleeps
// after cancellation. It never starts a wait that would end at or after
// ctx's deadline. With [Config.Clock] set, it waits on that clock
// instead, and the deadline is not compared (see Config.Clock).
//
// # Cost
//
// A call that succeeds at once allocates nothing and creates no timer: it
// costs a context check, a budget deposit and the Retryable call. A retry
// allocates one timer per call on its first wait (reused for later waits
// and stopped on return), the context that carries its number ([Attempt])
// per retry, and the [*ExhaustedError] if the loop gives up.
// bench/README.md has the measurements.
func NewLayer[Req, Resp any](cfg Config[Req, Resp]) (rampart.Layer[Req, Resp], error) {
	p, err := newPolicy(cfg)
	if err != nil {
		return nil, err
	}
	return layer[Req, Resp]{p: p}, nil
}

type layer[Req, Resp any] struct {
	p *policy[Req, Resp]
}

// Wrap wraps inner; a nil inner gives a service whose every call fails
// with an error matching [rampart.ErrNilService].
func (l layer[Req, Resp]) Wrap(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
	if nilservice.Is(inner) {
		return rampart.Failing[Req, Resp]("retry: Wrap")
	}
	return &service[Req, Resp]{p: l.p, inner: inner, first: ctxcheck.Unchecked(inner)}
}

type service[Req, Resp any] struct {
	p     *policy[Req, Resp]
	inner rampart.Service[Req, Resp]
	// first makes the first attempt, right after Call found the context
	// not done: inner, or inner without its own check of the context
	// (a circuit breaker's) when it has one to skip.
	first rampart.Service[Req, Resp]
}

// Call makes the first attempt inline, so a success costs a context check,
// a budget deposit and a predicate call, and leaves everything else to
// loop.
func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if ctx.Err() != nil { // the caller has given up: no attempt, no deposit
		var zero Resp
		return zero, ctxerr.Reason(ctx)
	}
	s.p.budget.Deposit()
	resp, err := s.first.Call(ctx, req)
	if err == nil && s.p.retryable == nil {
		return resp, nil // the common case, without a call of wantsRetry
	}
	// Retryable first: a success it does not want retried reads no
	// settings.
	if !s.p.wantsRetry(resp, err) {
		if s.p.obs != nil && err != nil && errors.Is(err, rampart.ErrOpen) {
			s.p.end(ctx, 1, err)
		}
		return resp, err
	}
	sc := s.p.tuner.schedule()
	if sc.maxAttempts == 1 {
		return resp, err
	}
	return s.loop(ctx, req, sc, resp, err)
}

// wantsRetry reports whether the outcome is one the loop would retry if it
// had attempts, budget and time left.
func (p *policy[Req, Resp]) wantsRetry(resp Resp, err error) bool {
	if p.retryable == nil {
		if err == nil {
			return false
		}
	} else if !p.retryable(resp, err) {
		return false
	}
	if err != nil {
		if errors.Is(err, rampart.ErrOpen) || errors.Is(err, rampart.ErrNilService) {
			return false
		}
		if _, ok := errors.AsType[*PermanentError](err); ok {
			return false
		}
	}
	return true
}

// loop retries after a first attempt whose outcome (resp, err) wants a
// retry, with the attempts and backoff of sc, and returns the final
// outcome as documented on NewLayer.
func (s *service[Req, Resp]) loop(ctx context.Context, req Req, sc *schedule, resp Resp, err error) (Resp, error) {
	p := s.p
	var timer *time.Timer // created on the first wait that needs one
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var prev time.Duration
	var lastErr error // the last failure that was not the caller's own cancellation
	// upstream: the request is already a retry at the hop that sent it.
	upstream := rampart.AttemptOf(ctx) > 1
	for attempt := 1; ; attempt++ {
		// Here attempt calls have been made and (resp, err), the last
		// outcome, wants a retry.
		if ctx.Err() != nil { // the caller gave up: never retry
			if err != nil && errors.Is(err, ctx.Err()) {
				// The attempt only reports the cancellation: return the
				// failure before it, if any, rather than hide it.
				why := ctxerr.Reason(ctx)
				p.end(ctx, attempt, why)
				if lastErr == nil {
					return resp, err
				}
				return resp, &ExhaustedError{Attempts: attempt, Err: lastErr, Reason: why}
			}
			return p.stop(ctx, resp, err, attempt, ctxerr.Reason(ctx))
		}
		if attempt >= sc.maxAttempts {
			return p.stop(ctx, resp, err, attempt, ErrMaxAttempts)
		}
		if upstream {
			return p.stop(ctx, resp, err, attempt, ErrUpstreamRetry)
		}
		d := max(sc.backoff.Delay(attempt, prev), 0)
		prev = d
		if h, ok := p.serverHint(resp, err); ok {
			if h == rampart.Forever {
				return p.stop(ctx, resp, err, attempt, ErrHintForever)
			}
			d = max(d, min(max(h, 0), p.maxHint))
		}
		if deadline, ok := ctx.Deadline(); ok && p.clock == nil && time.Until(deadline) <= d {
			return p.stop(ctx, resp, err, attempt, ErrDeadline)
		}
		if !p.budget.Withdraw() {
			return p.stop(ctx, resp, err, attempt, ErrBudgetExhausted)
		}
		if p.obs != nil {
			p.obs.Observe(ctx, observe.Event{Source: observe.Retry, Name: p.name, Kind: observe.Retrying, Attempt: attempt + 1, Duration: d, Err: err})
		}
		if d > 0 && p.clock != nil {
			_ = clock.Sleep(ctx, p.clock, d) // ctx's error is checked below
		} else if d > 0 {
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		}
		if ctx.Err() != nil { // cancelled during the wait, or as it ended
			p.refund() // the retry is not sent
			return p.stop(ctx, resp, err, attempt, ctxerr.Reason(ctx))
		}
		if p.discard != nil {
			p.discard(resp)
		}
		if err != nil {
			lastErr = err
		}
		resp, err = s.inner.Call(rampart.WithAttempt(ctx, attempt+1), req)
		open := err != nil && errors.Is(err, rampart.ErrOpen)
		if err != nil && errors.Is(err, rampart.ErrRefused) {
			p.refund() // a layer below refused the retry: it was not sent
		}
		// A breaker's refusal matches its cause (a timeout, say), which
		// may match the caller's context error too: it is still a
		// refusal, returned as it is below.
		if !open && err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			continue // the caller gave up during the attempt; reported above
		}
		if !p.wantsRetry(resp, err) {
			var why error
			if open {
				why = err
			}
			p.end(ctx, attempt+1, why)
			return resp, err
		}
	}
}

// end reports the end of a loop after attempts calls, stopped for the
// reason why (nil when the last outcome was not to be retried).
func (p *policy[Req, Resp]) end(ctx context.Context, attempts int, why error) {
	if p.obs != nil {
		p.obs.Observe(ctx, observe.Event{Source: observe.Retry, Name: p.name, Kind: observe.RetryEnd, Attempt: attempts, Err: why})
	}
}

// refund gives back the withdrawal for a retry that was not sent, if the
// budget takes refunds.
func (p *policy[Req, Resp]) refund() {
	if p.refunder != nil {
		p.refunder.Refund()
	}
}

// serverHint returns the longest retry-after hint in the outcome, as it
// was given (not yet clamped), and whether there was one.
func (p *policy[Req, Resp]) serverHint(resp Resp, err error) (time.Duration, bool) {
	var h time.Duration
	found := false
	if d, ok := rampart.RetryAfter(err); ok {
		h, found = d, true
	}
	if p.hint != nil {
		if x, ok := p.hint(resp, err); ok && (!found || x > h) {
			h, found = x, true
		}
	}
	return h, found
}

// stop ends the loop after attempts calls whose last outcome (resp, err)
// still wanted a retry, for the given reason, and reports it.
func (p *policy[Req, Resp]) stop(ctx context.Context, resp Resp, err error, attempts int, reason error) (Resp, error) {
	p.end(ctx, attempts, reason)
	if err == nil { // a retryable response: it is the result
		return resp, nil
	}
	return resp, &ExhaustedError{Attempts: attempts, Err: err, Reason: reason}
}
