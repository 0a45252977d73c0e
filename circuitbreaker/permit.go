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
// A Permit is a value: issuing one allocates nothing. Keep it in a variable
// and call its methods on that variable; do not copy a Permit (go vet
// reports copies), because each copy would be finished separately.
//
// A permit carries the epoch of the breaker state it was issued in. An
// outcome reported after the breaker has changed state (tripped, cooled
// down, been reset or forced) belongs to an earlier epoch and is discarded,
// so a slow call that straddles transitions can neither open nor close the
// breaker; the methods' boolean results tell the caller whether its outcome
// counted. A Permit is not safe for concurrent use; the zero Permit is
// finished already.
type Permit struct {
	_      noCopy
	b      *Breaker
	word   uint64 // the breaker's state word when the permit was issued
	ticket uint64 // the probe ticket in HalfOpen, else zero
	start  int64  // when issued (ns since b.base), if the policy measures latency
	done   bool
}

// Success records that the call succeeded and reports whether that counted
// (false if the permit was already finished or its epoch has passed).
func (p *Permit) Success() bool {
	// The fast path, inlined into the caller: a quiet Closed success.
	if b := p.b; b != nil && !p.done && b.quiet(p.word) {
		p.done = true
		return true
	}
	return p.finish(Success, nil)
}

// Failure records that the call failed with err (which may be nil, for a
// failure judged from a response) and reports whether that counted. err is
// not classified: [Config.IsFailure] is not consulted. If it trips the
// breaker, err becomes the [OpenError.Cause] of the rejections that follow.
func (p *Permit) Failure(err error) bool { return p.finish(Failure, err) }

// Ignore releases the permit without a verdict: in HalfOpen it frees the
// probe slot for another probe and the policy never sees it.
func (p *Permit) Ignore() { p.finish(Ignored, nil) }

// Done classifies err with [Classify] and [Config.IsFailure] and
// records the result: a nil error is a success, an error matching
// context.Canceled is ignored, any other error is a failure unless
// IsFailure says it is not, in which case it is a success. It reports
// whether the outcome counted (an ignored outcome never counts).
//
// Done sees only the error, so it cannot tell the caller's cancellation
// from a dependency's: it ignores both. Prefer [Permit.DoneContext] when the
// call's context is at hand.
func (p *Permit) Done(err error) bool {
	if err == nil {
		return p.Success()
	}
	return p.classified(Classify(err), err)
}

// DoneContext is [Permit.Done] for a call made with ctx: it classifies err
// with [ClassifyContext], so only the caller's own cancellation of ctx is
// ignored, and a context.Canceled that came from the dependency is a
// failure. [Config.IsFailure] is asked about failures as in Done. It
// reports whether the outcome counted. A nil err is a success and ctx is
// then not consulted. The layer from [NewLayer] finishes its permits with
// DoneContext.
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
	if p.done || p.b == nil {
		return false
	}
	p.done = true
	switch o {
	case Success, Ignored:
		err = nil // Call.Err is nil for a success
	default:
		o = Failure // an unknown Outcome from a Classifier is a failure
	}
	return p.b.record(p, o, err)
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

// Classify is the default classification of a call's error when the call's
// context is not known, used by [Permit.Done]: nil is a Success; a
// rejection by a breaker further in (an error matching [ErrOpen]) is a
// Failure, whatever failure tripped that breaker; an error matching
// [context.DeadlineExceeded] is a Failure (the dependency did not answer in
// the time it had, whether the deadline was the caller's or a timeout
// layer's); an error matching [context.Canceled] (and not
// DeadlineExceeded) is Ignored, on the presumption that the caller gave up;
// any other error is a Failure.
//
// From the error alone the caller's cancellation cannot be told apart from
// a dependency's (a reset stream, a cancelled sub-request), nor a caller
// who cancelled after an attempt timed out from a deadline: [ClassifyContext]
// decides both from the context, and is what the layer uses.
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

// ClassifyContext is the default classification of a call made with ctx,
// used by the layer from [NewLayer] and by [Permit.DoneContext]. It
// is to be called when the call has returned:
//   - a nil err is a Success, whatever ctx says: the dependency answered;
//   - an error while the caller has cancelled ctx (ctx.Err() matches
//     [context.Canceled]) is Ignored, whatever the error's chain holds (a
//     retry exhaustion that wraps an earlier timeout, say): the caller gave
//     up, the dependency did nothing wrong;
//   - any other error is a Failure: an expired deadline, the caller's or a
//     timeout layer's (the dependency did not answer in the time it had),
//     and a context.Canceled that did not come from ctx, which is the
//     dependency's own failure.
//
// A call whose context was done before it started is not made by the layer
// and never classified. A nil ctx (which no caller should pass) tells
// nothing: err is then judged by [Classify]. Safe for concurrent use; it
// reads ctx.Err() only for a non-nil err.
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
