package circuitbreaker

import (
	"context"
	"errors"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/ctxerr"
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
	if inner == nil {
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
	_        [cacheLine - 32]byte
}

// cacheLine is the size of a cache line on the machines that matter
// (amd64, arm64 servers), for padding.
const cacheLine = 64

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (resp Resp, err error) {
	w := s.b.word.Load()
	if w&rejectMask == uint64(Open) {
		// TryAcquire's Open fast path, written out: an Open period whose
		// cool-down is not near its end (flagReady clear) rejects with
		// the period's prebuilt error without reading the clock, if the
		// period read is the word's (else a transition is being
		// published, and tryAcquire looks again).
		if per := s.b.period.Load(); per.word == w && ctx.Err() == nil {
			if s.b.set.observer != nil {
				s.b.observe(ctx, observe.Rejected, per.reject, 0)
			}
			return resp, per.reject
		}
	}
	if ctx.Err() != nil {
		return resp, ctxerr.Reason(ctx)
	}
	// TryAcquire's Closed fast path, written out because the compiler
	// does not inline TryAcquire: this is the hottest line of the package.
	var p Permit
	if w&fastMask == fastWord {
		p = Permit{b: s.b, word: w}
	} else if p, err = s.b.tryAcquire(ctx); err != nil {
		return resp, err
	}
	normal := false
	defer func() {
		if !normal {
			p.finish(ctx, rampart.Failure, ErrPanicked)
		}
	}()
	resp, err = s.inner.Call(ctx, req)
	// normal is set only once the outcome is recorded: a panic in the
	// classifier or in IsFailure is a failure, as one in the call is.
	if s.classify == nil && err == nil && s.b.quiet(p.word) {
		p.b = nil // Success's fast path, also written out
		if obs := s.b.set.successes; obs != nil {
			// A quiet success is untimed: the word had no flagTimed.
			obs.Observe(ctx, s.b.set.success)
		}
		normal = true
		return resp, err
	}
	o, judged := s.judge(ctx, resp, err)
	p.finish(ctx, o, judged)
	normal = true
	return resp, err
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
