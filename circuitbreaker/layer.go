package circuitbreaker

import (
	"context"
	"errors"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/ctxerr"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/observe"
)

// ErrPanicked is the failure recorded when the protected call, a
// [Classifier] or [Config.IsFailure] panics; the panic itself continues to
// the caller unrecovered.
var ErrPanicked = errors.New("circuitbreaker: protected call or its classifier panicked")

// Classifier judges a finished call from its response and error (an HTTP
// 503 as a Failure, say). It is not asked about a call the caller
// cancelled, and must be safe for concurrent use.
type Classifier[Resp any] func(resp Resp, err error) rampart.Outcome

// NewLayer returns a layer that guards a service with b, judging each
// call with classify: a nil classify judges by the error alone (see
// [ClassifyContext]), and [Config.IsFailure] has the last word on errors
// either way. A call returns ctx.Err() (with its [context.Cause]) when ctx
// is already done, the [*OpenError] when b refuses it, and otherwise the
// inner result unchanged, recorded as by [Permit.DoneContext]. A nil b
// fails every call; Wrap(nil) fails with [rampart.ErrNilService]. Safe for
// concurrent use.
func NewLayer[Req, Resp any](b *Breaker, classify Classifier[Resp]) rampart.Layer[Req, Resp] {
	return layer[Req, Resp]{b: b, classify: classify}
}

type layer[Req, Resp any] struct {
	b        *Breaker
	classify Classifier[Resp]
}

// errNilBreaker is what every call through a layer built over a nil
// *Breaker fails with, instead of panicking.
var errNilBreaker = errors.New("circuitbreaker: layer built over a nil *Breaker (build one with circuitbreaker.New)")

func (l layer[Req, Resp]) Wrap(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
	if l.b == nil {
		return rampart.ServiceFunc[Req, Resp](func(context.Context, Req) (resp Resp, err error) {
			return resp, errNilBreaker
		})
	}
	if nilservice.Is(inner) {
		return rampart.Failing[Req, Resp]("circuitbreaker: Wrap")
	}
	return &service[Req, Resp]{b: l.b, classify: l.classify, inner: inner}
}

// service is the layer's service. Every call reads it, so it fills a
// whole cache line: the allocator puts 64-byte objects on 64-byte
// boundaries, so nothing written by another goroutine shares its line
// (false sharing made parallel calls slower than serial ones, depending on
// what the allocator had put next to a 32-byte service).
type service[Req, Resp any] struct {
	b        *Breaker
	classify Classifier[Resp]
	inner    rampart.Service[Req, Resp]
	// checked is true for the service Unchecked returns: its caller has
	// just found the context not done, and Call does not look again.
	checked bool
	_       [cacheLine - 33]byte
}

// Unchecked returns a copy of s that skips the context check every call
// begins with, for a caller that has just made it (package ctxcheck): a
// retry layer's first attempt.
func (s *service[Req, Resp]) Unchecked() rampart.Service[Req, Resp] {
	c := *s
	c.checked = true
	return &c
}

// cacheLine is the size of a cache line on the machines that matter
// (amd64, arm64 servers), for padding.
const cacheLine = 64

// Call takes the Closed, untimed path and the Open refusal itself, with
// nothing but what they need so that its frame stays small; every other
// state word goes to call.
func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	b := s.b
	w := b.word.Load()
	if w&fastMask == fastWord {
		if !s.checked && ctx.Err() != nil {
			var zero Resp
			return zero, ctxerr.Reason(ctx)
		}
		// TryAcquire's Closed fast path, written out because the
		// compiler does not inline TryAcquire: this is the hottest line
		// of the package.
		p := Permit{b: b, word: w}
		defer p.abandon(ctx)
		resp, err := s.inner.Call(ctx, req)
		quiet := false
		if err == nil && s.classify == nil {
			// quiet, with the default policy's test (Consecutive: no
			// failures pending) written out.
			if run := b.run; run != nil {
				quiet = b.word.Load() == w && run.Load() == 0
			} else {
				quiet = b.quiet(w)
			}
		}
		if quiet {
			p.b = nil // Success's fast path, also written out
			if b.set.successes != nil {
				b.observeSuccess(ctx)
			}
			return resp, nil
		}
		s.done(ctx, &p, resp, err)
		return resp, err
	}
	if w&rejectMask == uint64(Open) {
		// TryAcquire's Open fast path, written out: an Open period whose
		// cool-down is not near its end (flagReady clear) refuses with
		// the period's prebuilt error without reading the clock, if the
		// period read is the word's (else a transition is being
		// published, and call looks again).
		if per := b.period.Load(); per.word == w && (s.checked || ctx.Err() == nil) {
			if b.set.observer != nil {
				b.observe(ctx, observe.Rejected, per.reject, 0)
			}
			var zero Resp
			return zero, per.reject
		}
	}
	return s.call(ctx, req)
}

// call is Call for a state word that is neither Closed and untimed nor
// Open without flagReady: HalfOpen, ForcedOpen, ForcedClosed, the end of a
// cool-down, a policy that measures latency, a zero Breaker's first use.
func (s *service[Req, Resp]) call(ctx context.Context, req Req) (resp Resp, err error) {
	if !s.checked && ctx.Err() != nil {
		return resp, ctxerr.Reason(ctx)
	}
	p, err := s.b.tryAcquire(ctx)
	if err != nil {
		return resp, err
	}
	defer p.abandon(ctx)
	resp, err = s.inner.Call(ctx, req)
	s.done(ctx, &p, resp, err)
	return resp, err
}

// done finishes p for a call that returned (resp, err), as judged by
// judge. A panic in the classifier or in IsFailure leaves p unfinished,
// for abandon to record as a failure, as one in the call does.
func (s *service[Req, Resp]) done(ctx context.Context, p *Permit, resp Resp, err error) {
	o, judged := s.judge(ctx, resp, err)
	p.finish(ctx, o, judged)
}

// judge returns how a call that returned (resp, err) counts, and the
// error to record with it: the caller's cancellation is ignored, then
// classify (or [ClassifyContext] without one) judges, and
// [Config.IsFailure] may overrule a failure of a non-nil error.
func (s *service[Req, Resp]) judge(ctx context.Context, resp Resp, err error) (rampart.Outcome, error) {
	var o rampart.Outcome
	switch {
	case s.classify == nil:
		o = ClassifyContext(ctx, err)
	case ClassifyContext(ctx, err) == rampart.Ignored:
		return rampart.Ignored, err // the caller gave up: classify is not asked
	case err != nil:
		o = s.classify(resp, err)
	default:
		if o = s.classify(resp, nil); o == rampart.Failure {
			return rampart.Failure, ErrBadResponse
		}
		return o, nil
	}
	if o == rampart.Failure && err != nil && s.b.set.isFailure != nil && !s.b.set.isFailure(err) {
		o = rampart.Success
	}
	return o, err
}
