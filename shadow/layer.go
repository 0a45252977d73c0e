package shadow

import (
	"context"
	"errors"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilservice"
)

// NewLayer returns a layer that runs s's candidates beside the calls
// through it, judging each call with classify as the live breaker does
// (nil judges by the error alone, as a breaker without a classifier).
// Every call goes on as if the layer were not there: the candidates only
// watch, and their refusals are counted, never returned. A nil service or
// a nil s gives a service whose every call fails with an error matching
// [rampart.ErrNilService]. classify must be safe for concurrent use. A
// call whose service or classify panics is a failure
// (circuitbreaker.ErrPanicked) for the candidates, as the live breaker
// counts it, and the panic goes on.
//
// A call that every candidate lets through, Closed, and that succeeds
// costs per candidate a breaker's Closed permit and its success (bench:
// BenchmarkShadow), and allocates nothing.
//
// later, if not nil, lets a call judged a success be judged again after it
// returns, as an adapter's breaker judges a response's body when it is
// read (ramparthttp's: a body whose read fails is a failure): it is called
// with the call's context and response and a function done; when it
// returns true, the candidates keep their permits (a HalfOpen candidate
// its probe slot, as the live breaker does) until done is called, and are
// then given the success, or, for a non-nil error, a failure (ignored when
// the caller cancelled the context). done may be called from any
// goroutine, once at most. A call whose done is never
// called counts for nobody, as for its breaker; a candidate's probe slot
// then returns after its ProbeLease. A call judged a success costs two
// allocations when later is set.
// Returning false settles the call at once. It must be safe for
// concurrent use.
func NewLayer[Req, Resp any](s *Shadow, classify circuitbreaker.Classifier[Resp], later func(ctx context.Context, resp Resp, done func(err error)) bool) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		switch {
		case nilservice.Is(inner):
			return rampart.Failing[Req, Resp]("shadow: Wrap")
		case s == nil:
			return rampart.Failing[Req, Resp]("shadow: NewLayer's Shadow")
		}
		return &service[Req, Resp]{s: s, classify: classify, later: later, inner: inner}
	})
}

type service[Req, Resp any] struct {
	s        *Shadow
	classify circuitbreaker.Classifier[Resp]
	later    func(context.Context, Resp, func(error)) bool
	inner    rampart.Service[Req, Resp]
}

// verdict is how a call counts for the candidates.
type verdict uint8

const (
	success verdict = iota
	failure
	ignored
	unknown // the live breaker or a limit refused it
)

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	sh := s.s
	if sh.first.Load() == 0 {
		sh.first.CompareAndSwap(0, sh.now()+1)
	}
	// Permits on the stack, in an array no larger than needed for the
	// common one or two candidates: zeroing eight costs more than a
	// candidate.
	if len(sh.cands) <= 2 {
		var slots [2]slot
		return s.call(ctx, req, slots[:len(sh.cands)])
	}
	var slots [MaxCandidates]slot
	return s.call(ctx, req, slots[:len(sh.cands)])
}

// slot is one candidate's permit, or its refusal, for one call.
type slot struct {
	p       circuitbreaker.Permit
	refusal error
}

// call makes the call with one slot per candidate.
func (s *service[Req, Resp]) call(ctx context.Context, req Req, slots []slot) (Resp, error) {
	sh := s.s
	sh.admit(slots)
	ok := false
	defer func() {
		if !ok { // the call or the classifier panicked: a failure, as the live breaker counts it
			sh.know(failure)
			sh.settle(ctx, slots, failure, circuitbreaker.ErrPanicked, circuitbreaker.ErrPanicked)
		}
	}()
	resp, err := s.inner.Call(ctx, req)
	v, judged := s.judge(ctx, resp, err)
	ok = true
	if v == success && s.later != nil && s.judgeLater(ctx, resp, slots) {
		return resp, err // known once judged again
	}
	if v == success || v == failure {
		sh.know(v)
	}
	sh.settle(ctx, slots, v, judged, err)
	return resp, err
}

// judgeLater hands the permits of slots to a function that settles them
// when s.later says the call ended, and reports whether s.later took it.
func (s *service[Req, Resp]) judgeLater(ctx context.Context, resp Resp, slots []slot) bool {
	held := make([]slot, len(slots))
	for i := range slots {
		held[i].p, held[i].refusal = slots[i].p.Move(), slots[i].refusal
	}
	if s.later(ctx, resp, func(err error) {
		sh := s.s
		switch {
		case err == nil:
			sh.know(success)
			sh.settle(ctx, held, success, nil, nil)
		case circuitbreaker.ClassifyContext(ctx, err) == rampart.Ignored:
			sh.settle(ctx, held, ignored, err, err)
		default:
			sh.know(failure)
			sh.settle(ctx, held, failure, err, err)
		}
	}) {
		return true
	}
	for i := range slots { // settled at once after all
		slots[i].p = held[i].p.Move()
	}
	return false
}

// admit asks each candidate for a permit.
func (sh *Shadow) admit(slots []slot) {
	cands := sh.cands[:len(slots)]
	for i, c := range cands {
		slots[i].p, slots[i].refusal = c.b.TryAcquire()
	}
}

// settle gives each candidate the outcome v of the call that returned
// err (judged: the error a failure is recorded with), and counts it.
func (sh *Shadow) settle(ctx context.Context, slots []slot, v verdict, judged, err error) {
	cands := sh.cands[:len(slots)]
	if v == success { // the common case, on its own short path
		for i, c := range cands {
			if sl := &slots[i]; sl.refusal == nil {
				sl.p.Success()
			} else {
				c.refused.Add(1)
				sh.lost(ctx, c, sl.refusal)
			}
		}
		sh.calls.Add(1)
		return
	}
	guessed := v == unknown
	if l := sh.live; l != nil {
		switch {
		case guessed && errors.Is(err, circuitbreaker.ErrOpen):
			l.refused.Add(1)
		case guessed || v == failure:
			l.failed.Add(1)
		case v == ignored:
			l.ignored.Add(1)
		}
	}
	if guessed { // the dependency as last seen
		switch sh.latest.Load() {
		case knownSuccess:
			v = success
		default:
			v, judged = failure, err
		}
	}
	for i, c := range cands {
		sl := &slots[i]
		if sl.refusal != nil {
			c.refused.Add(1)
			continue // a guessed success is no goodput lost
		}
		if guessed {
			c.unknown.Add(1)
		}
		switch v {
		case success:
			sl.p.Success()
		case failure:
			c.failed.Add(1)
			sl.p.Failure(judged)
		default:
			c.ignored.Add(1)
			sl.p.Ignore()
		}
	}
	sh.calls.Add(1)
}

// judge returns how the call that returned (resp, err) counts, and the
// error to give a candidate's breaker with a failure, in the order a
// breaker judges one.
func (s *service[Req, Resp]) judge(ctx context.Context, resp Resp, err error) (verdict, error) {
	if err != nil && (errors.Is(err, circuitbreaker.ErrOpen) || errors.Is(err, concurrency.ErrLimited)) {
		return unknown, err
	}
	o := circuitbreaker.ClassifyContext(ctx, err)
	if o != rampart.Ignored && s.classify != nil {
		o = s.classify(resp, err)
	}
	var v verdict
	switch o {
	case rampart.Success:
		v = success
	case rampart.Ignored:
		return ignored, err
	default:
		v = failure
		if err == nil {
			err = circuitbreaker.ErrBadResponse
		}
	}
	return v, err
}

// know makes the outcome of a call judged v (success or failure) the
// latest known.
func (sh *Shadow) know(v verdict) {
	known := knownSuccess
	if v == failure {
		known = knownFailure
	}
	if sh.latest.Load() != known {
		sh.latest.Store(known)
	}
}
