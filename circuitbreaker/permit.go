package circuitbreaker

import (
	"context"
	"errors"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/observe"
)

// Permit is the right to make one call. Finish it once with Success,
// Failure, Ignore, Done or DoneContext: a second finish is a no-op, and an
// outcome reported after the breaker changed state does not count. Do not
// copy a Permit or share it between goroutines; the zero Permit is
// finished already.
//
// The first finish is reported to the breaker's Observer as the outcome
// it gives (success, failure with its error, or ignored), even when the
// breaker no longer counts it (the breaker changed state since the permit
// was issued, the probe's lease expired, the breaker is forced closed): so
// the Observer's counts by outcome are those of what the callers got. A
// permit never finished is not reported; a probe's slot comes back after
// [Config.ProbeLease].
//
// A nil *Permit is a finished one: its finishing methods do nothing and
// report false, Move returns the zero Permit, Probe is false.
type Permit struct {
	// Four fields at most, three words: the compiler then keeps a Permit
	// returned by TryAcquire in registers instead of a stack temporary.
	_ noCopy
	// b is the breaker, nil once the permit is finished (or for the zero
	// Permit).
	b    *Breaker
	word uint64 // the breaker's state word when the permit was issued
	// aux is the probe ticket of a HalfOpen permit; for any other permit,
	// when the policy measures latency, the mono time it was issued.
	aux int64
}

// Success records a success and reports whether it counted. The
// breaker's Observer, if any, is told with [context.Background]; prefer
// [Permit.DoneContext] to report with the call's context.
func (p *Permit) Success() bool {
	if p == nil {
		return false
	}
	// The fast path: a quiet Closed success, counted without the lock.
	// (Success is not inlined: quiet alone is over the inlining budget.)
	if b := p.b; b != nil && b.quiet(p.word) {
		p.b = nil
		if obs := b.set.successes; obs != nil {
			obs.Observe(context.Background(), b.set.success)
		}
		return true
	}
	return p.finish(context.Background(), rampart.Success, nil)
}

// Failure records a failure with err (which may be nil), unclassified, and
// reports whether it counted; a trip's [OpenError.Cause] is err. The
// breaker's Observer, if any, is told with [context.Background].
func (p *Permit) Failure(err error) bool { return p.finish(context.Background(), rampart.Failure, err) }

// Ignore releases the permit without a verdict, freeing a probe slot. The
// breaker's Observer, if any, is told with [context.Background].
func (p *Permit) Ignore() { p.finish(context.Background(), rampart.Ignored, nil) }

// Done records err as judged by [Classify] and [Config.IsFailure] and
// reports whether it counted. Prefer [Permit.DoneContext].
func (p *Permit) Done(err error) bool {
	if err == nil {
		return p.Success()
	}
	return p.classified(context.Background(), Classify(err), err)
}

// DoneContext is [Permit.Done] judged by [ClassifyContext] instead, and
// reported to the breaker's Observer with ctx.
func (p *Permit) DoneContext(ctx context.Context, err error) bool {
	if p == nil {
		return false
	}
	if err == nil {
		if b := p.b; b != nil && b.quiet(p.word) {
			p.b = nil
			if obs := b.set.successes; obs != nil {
				obs.Observe(ctx, b.set.success)
			}
			return true
		}
		return p.finish(ctx, rampart.Success, nil)
	}
	return p.classified(ctx, ClassifyContext(ctx, err), err)
}

// classified records the default outcome o of err, asking IsFailure about
// a failure.
func (p *Permit) classified(ctx context.Context, o rampart.Outcome, err error) bool {
	if p == nil || p.b == nil {
		return false
	}
	if o == rampart.Failure && p.b.set.isFailure != nil && !p.isFailure(ctx, err) {
		o = rampart.Success
	}
	return p.finish(ctx, o, err)
}

// isFailure asks Config.IsFailure about err. If IsFailure panics, the
// permit records the failure ErrPanicked and the panic continues, never
// recovered, so its stack is kept (the way of x/sync/singleflight).
func (p *Permit) isFailure(ctx context.Context, err error) bool {
	normal := false
	defer func() {
		if !normal {
			p.finish(ctx, rampart.Failure, ErrPanicked)
		}
	}()
	failure := p.b.set.isFailure(err)
	normal = true
	return failure
}

// finish records outcome o once, with err the call's error, and reports
// it to the breaker's Observer with ctx: every permit finished is
// reported once, with the outcome it was finished with.
func (p *Permit) finish(ctx context.Context, o rampart.Outcome, err error) bool {
	if p == nil {
		return false
	}
	b := p.b
	if b == nil {
		return false
	}
	p.b = nil
	reported := err // an ignored call's event carries its error
	switch o {
	case rampart.Success:
		err, reported = nil, nil
	case rampart.Ignored:
		err = nil // Call.Err is nil for an ignored call
	default:
		o = rampart.Failure // an unknown Outcome from a Classifier is a failure
	}
	counted, d := b.record(p.word, p.aux, o, err)
	if b.set.observer != nil && (o != rampart.Success || b.set.successes != nil) {
		b.observe(ctx, outcomeKinds[o], reported, d)
	}
	return counted
}

// abandon records the failure ErrPanicked on a permit still unfinished
// when the function that deferred it returns: the protected call, its
// classifier or IsFailure panicked. The panic continues.
func (p *Permit) abandon(ctx context.Context) {
	if p.b != nil {
		p.finish(ctx, rampart.Failure, ErrPanicked)
	}
}

// outcomeKinds are the kinds of event of the outcomes.
var outcomeKinds = [...]observe.Kind{rampart.Success: observe.Success, rampart.Failure: observe.Failure, rampart.Ignored: observe.Ignored}

// observe reports an event of kind about one call to the breaker's
// Observer, if it has one: its refusal err, its failure err, or its
// duration d. Called only on a breaker that is set up.
func (b *Breaker) observe(ctx context.Context, kind observe.Kind, err error, d time.Duration) {
	if obs := b.set.observer; obs != nil {
		obs.Observe(ctx, observe.Event{Source: observe.Breaker, Name: b.set.name, Kind: kind, Err: err, Duration: d})
	}
}

// Move returns a Permit holding p's right to its call and leaves p
// finished, so that a permit acquired into a local variable can be kept
// where the call's outcome is judged later (the body of an HTTP response
// that is read after the call returns), which copying it, forbidden, would
// not allow. Only the returned Permit can finish the call; finishing p
// afterwards is a no-op, as for any finished permit. Moving a finished
// permit returns a finished one. Move reports nothing to the breaker: it
// is neither an outcome nor a release.
func (p *Permit) Move() Permit {
	if p == nil {
		return Permit{}
	}
	b, w, aux := p.b, p.word, p.aux
	p.b = nil
	return Permit{b: b, word: w, aux: aux}
}

// noCopy lets go vet's copylocks check report copies of a Permit.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Classify judges err without its call's context: nil is a Success, an
// error matching [context.Canceled] (and not [ErrOpen]) is Ignored, and
// any other is a Failure.
func Classify(err error) rampart.Outcome {
	switch {
	case err == nil:
		return rampart.Success
	case errors.Is(err, ErrOpen), errors.Is(err, context.DeadlineExceeded):
		// A refusal's chain holds its cause, which may be a
		// cancellation: the refusal itself is what is judged.
		return rampart.Failure
	case errors.Is(err, context.Canceled):
		return rampart.Ignored
	}
	return rampart.Failure
}

// ClassifyContext judges err from a call made with ctx, as the layers and
// [Run] do: nil is a Success, an error after ctx was cancelled is Ignored,
// any other is a Failure. A nil ctx falls back to [Classify].
func ClassifyContext(ctx context.Context, err error) rampart.Outcome {
	switch {
	case err == nil:
		return rampart.Success
	case ctx == nil:
		return Classify(err)
	case errors.Is(ctx.Err(), context.Canceled):
		return rampart.Ignored
	}
	return rampart.Failure
}

// Probe reports whether p is the permit of a HalfOpen probe: one that holds
// a probe slot until it is finished, or until [Config.ProbeLease] ends. An
// adapter whose calls may outlive their return (an HTTP response whose body
// is read later) uses it to bound how long a probe keeps its slot. It is
// false for a finished or zero Permit.
func (p *Permit) Probe() bool { return p != nil && p.b != nil && stateOf(p.word) == HalfOpen }
