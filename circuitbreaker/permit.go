package circuitbreaker

import (
	"context"
	"errors"
	"fmt"
)

// Permit is the right to make one call, issued by [Breaker.TryAcquire].
// Finish it with exactly one of [Permit.Success], [Permit.Failure],
// [Permit.Ignore], [Permit.Done] or [Permit.DoneContext]; finishing it
// again is a no-op that returns false.
//
// A Permit is a value that allocates nothing; do not copy it (go vet
// reports copies). It carries the epoch of the state it was issued in: an
// outcome reported after the breaker changed state is discarded, so a slow
// call that straddles transitions can neither open nor close the breaker,
// and the methods report whether the outcome counted. A Permit is not safe
// for concurrent use; the zero Permit is finished already.
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

// Success records that the call succeeded and reports whether that counted
// (false if the permit was already finished or its epoch has passed).
func (p *Permit) Success() bool {
	// The fast path, inlined into the caller: a quiet Closed success.
	if b := p.b; b != nil && b.quiet(p.word) {
		p.b = nil
		return true
	}
	return p.finish(Success, nil)
}

// Failure records that the call failed with err (nil for a failure judged
// from a response), without classifying it, and reports whether that
// counted. If it trips the breaker, err becomes the [OpenError.Cause].
func (p *Permit) Failure(err error) bool { return p.finish(Failure, err) }

// Ignore releases the permit without a verdict; in HalfOpen it frees the
// probe slot.
func (p *Permit) Ignore() { p.finish(Ignored, nil) }

// Done classifies err with [Classify] and [Config.IsFailure], records the
// result and reports whether it counted. It cannot tell the caller's
// cancellation from a dependency's and ignores both: prefer
// [Permit.DoneContext] when the call's context is at hand.
func (p *Permit) Done(err error) bool {
	if err == nil {
		return p.Success()
	}
	return p.classified(Classify(err), err)
}

// DoneContext is [Permit.Done] for a call made with ctx, classified with
// [ClassifyContext]: only the caller's own cancellation is ignored.
func (p *Permit) DoneContext(ctx context.Context, err error) bool {
	if err == nil {
		return p.Success()
	}
	return p.classified(ClassifyContext(ctx, err), err)
}

// classified records the default outcome o of err, asking IsFailure about
// a failure.
func (p *Permit) classified(o Outcome, err error) bool {
	if p.b == nil {
		return false
	}
	if o == Failure && p.b.set.isFailure != nil && !p.b.set.isFailure(err) {
		o = Success
	}
	return p.finish(o, err)
}

// finish records outcome o once.
func (p *Permit) finish(o Outcome, err error) bool {
	b := p.b
	if b == nil {
		return false
	}
	p.b = nil
	switch o {
	case Success, Ignored:
		err = nil // Call.Err is nil for a success
	default:
		o = Failure // an unknown Outcome from a Classifier is a failure
	}
	return b.record(p.word, p.aux, o, err)
}

// noCopy lets go vet's copylocks check report copies of a Permit.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Outcome is how a finished call counts: a success, a failure, or neither.
type Outcome uint8

const (
	// Success is a call that shows the dependency is healthy.
	Success Outcome = iota
	// Failure is a call that shows the dependency is unhealthy.
	Failure
	// Ignored is a call that says nothing about the dependency, such as
	// one the caller cancelled. It is not counted; in HalfOpen it frees
	// its probe slot.
	Ignored
)

// String returns "success", "failure" or "ignored".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Classify is the classification of a call's error when its context is
// not known, used by [Permit.Done]: nil is a Success; an error matching
// [ErrOpen] (a breaker further in) or [context.DeadlineExceeded] is a
// Failure; one matching [context.Canceled] is Ignored, presuming the caller
// gave up; any other error is a Failure. [ClassifyContext] tells the
// caller's cancellation from a dependency's.
func Classify(err error) Outcome {
	switch {
	case err == nil:
		return Success
	case errors.Is(err, ErrOpen), errors.Is(err, context.DeadlineExceeded):
		// A rejection's chain holds its cause, which may be a
		// cancellation: the rejection itself is what is judged.
		return Failure
	case errors.Is(err, context.Canceled):
		return Ignored
	}
	return Failure
}

// ClassifyContext is the classification of a call made with ctx, once it
// has returned, used by the layers, [Run] and [Permit.DoneContext]: a nil
// err is a Success; an error while the caller has cancelled ctx is Ignored
// (the caller gave up); any other error is a Failure, an expired deadline
// and a context.Canceled that did not come from ctx included. A nil ctx
// falls back to [Classify].
func ClassifyContext(ctx context.Context, err error) Outcome {
	switch {
	case err == nil:
		return Success
	case ctx == nil:
		return Classify(err)
	case errors.Is(ctx.Err(), context.Canceled):
		return Ignored
	}
	return Failure
}
