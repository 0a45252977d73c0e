package circuitbreaker

import (
	"context"
	"errors"

	"github.com/rampart-go/rampart"
)

// ErrPanicked is the failure recorded when the protected call panics.
// It becomes the [OpenError.Cause] if the panic trips the breaker. The panic
// itself continues to the caller unchanged.
var ErrPanicked = errors.New("circuitbreaker: protected call panicked")

// Classifier judges a finished call from its response and error, for
// dependencies whose failures are responses rather than errors (an HTTP 503,
// a gRPC UNAVAILABLE in a reply). It must be safe for concurrent use.
//
// The layer from [NewClassifiedLayer] does not call it for an error
// returned after the caller cancelled the call's context: that call is
// Ignored first (see [ClassifyContext]). So a context.Canceled that reaches
// a Classifier came from the dependency, and the default classification counts it as a Failure;
// [Classify], which cannot tell whose cancellation it is, would ignore it.
// A Classifier that keeps the default for errors therefore returns Failure
// for every non-nil error it does not judge otherwise.
type Classifier[Resp any] func(resp Resp, err error) Outcome

// NewLayer returns a layer that guards a service with b, classifying each
// call with [Permit.DoneContext] (so with [ClassifyContext] and
// [Config.IsFailure]). Layers from the same b share its state: a trip seen
// through one protects every service it wraps. Safe for concurrent
// use.
//
// A call through the layer:
//   - is not made, and not counted, when ctx is already done: it returns
//     ctx.Err();
//   - is not made when b rejects it: it returns the [*OpenError];
//   - otherwise calls the inner service and records the outcome; the
//     response and error are returned unchanged. An error counts as a
//     failure unless the caller cancelled ctx while the call ran (then it
//     is ignored) or IsFailure says it does not.
//
// If the inner call panics, the layer records the failure [ErrPanicked] and
// the panic continues with its original stack (the layer notices the panic
// with a "finished normally" flag, as x/sync/singleflight does, and never
// recovers it). Without recovering, a panic cannot be told apart from
// runtime.Goexit, so an inner call that exits its goroutine is recorded as
// a failure too. A call through a Closed breaker allocates nothing.
//
// b may be a zero [Breaker] (it then behaves as New(Config{})). A nil b
// cannot be reported here: every call through the layer then fails with
// an error saying the layer was built over a nil *Breaker, and nothing is
// called. The layer's Wrap of a nil service returns a service whose every
// call fails with an error matching [rampart.ErrNilService], without
// asking or counting anything against b.
func NewLayer[Req, Resp any](b *Breaker) rampart.Layer[Req, Resp] {
	return layer[Req, Resp]{b: b}
}

// NewClassifiedLayer is [NewLayer] with classify judging each finished call
// instead of [Permit.DoneContext]. Use it when a response can mean the
// dependency is unhealthy, for example to count an HTTP 503 as a failure.
// [Config.IsFailure] still has the last word on errors: when classify counts
// a non-nil error as a failure and IsFailure returns false for it, the call
// counts as a success. It is never asked about a nil error (a response that
// classify judged a failure).
//
// The caller's cancellation comes before classify: an error returned after
// the caller cancelled ctx is ignored without calling classify (the caller
// gave up; the response or error says nothing about the dependency). A call
// that returned a nil error is always given to classify, cancelled or not:
// its response is a real answer.
//
// A nil classify judges calls as [NewLayer] does. A nil b and a nil
// service are reported per call, as with NewLayer.
func NewClassifiedLayer[Req, Resp any](b *Breaker, classify Classifier[Resp]) rampart.Layer[Req, Resp] {
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

type service[Req, Resp any] struct {
	b        *Breaker
	classify Classifier[Resp]
	inner    rampart.Service[Req, Resp]
}

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (resp Resp, err error) {
	if err := ctx.Err(); err != nil {
		return resp, err
	}
	// TryAcquire's Closed fast path, written out because the compiler
	// does not inline TryAcquire: this is the hottest line of the package.
	var p Permit
	if w := s.b.word.Load(); w&fastMask == fastWord {
		p = Permit{b: s.b, word: w}
	} else if p, err = s.b.tryAcquire(); err != nil {
		return resp, err
	}
	normal := false
	defer func() {
		if !normal {
			p.Failure(ErrPanicked)
		}
	}()
	resp, err = s.inner.Call(ctx, req)
	normal = true
	switch {
	case s.classify == nil && err == nil && s.b.quiet(p.word):
		p.done = true // Success's fast path, also written out
	case s.classify == nil:
		p.DoneContext(ctx, err)
	case ClassifyContext(ctx, err) == Ignored:
		p.Ignore() // the caller gave up: classify is not asked
	case err != nil:
		p.classified(s.classify(resp, err), err) // IsFailure may overrule
	default:
		if o := s.classify(resp, nil); o == Failure {
			p.finish(o, ErrBadResponse)
		} else {
			p.finish(o, nil)
		}
	}
	return resp, err
}
