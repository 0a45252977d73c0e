package circuitbreaker

import (
	"context"
	"errors"
	"fmt"
)

// Permit is the right to make one call, issued by [Breaker.TryAcquire]
// (CB5). Finish it with exactly one of [Permit.Success], [Permit.Failure],
// [Permit.Ignore] or [Permit.Done]; finishing it again is a no-op that
// returns false.
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

// Done classifies err with [Classify] and [Config.IsFailure] (CB8) and
// records the result: a nil error is a success, context.Canceled is
// ignored, any other error is a failure unless IsFailure says it is not, in
// which case it is a success. It reports whether the outcome counted (an
// ignored outcome never counts).
func (p *Permit) Done(err error) bool {
	if err == nil {
		return p.Success()
	}
	if p.b == nil {
		return false
	}
	o := Classify(err)
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

// Classify is the default classification of a call's error (CB8): nil is a
// Success; an error matching [context.Canceled] is Ignored (the caller gave
// up, the dependency did nothing wrong); an error matching
// [context.DeadlineExceeded] is a Failure (the dependency did not answer in
// the time it had, whether the deadline was the caller's or a timeout
// layer's); any other error is a Failure. A call whose context was done
// before it started is not made by the layer and never reaches Classify.
func Classify(err error) Outcome {
	switch {
	case err == nil:
		return Success
	case errors.Is(err, context.DeadlineExceeded):
		return Failure
	case errors.Is(err, context.Canceled):
		return Ignored
	}
	return Failure
}
