package circuitbreaker

import (
	"context"
	"errors"
	"fmt"
)

// Permit is the right to make one call. Finish it once with Success,
// Failure, Ignore, Done or DoneContext: a second finish is a no-op, and an
// outcome reported after the breaker changed state does not count. Do not
// copy a Permit or share it between goroutines; the zero Permit is
// finished already.
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

// Success records a success and reports whether it counted.
func (p *Permit) Success() bool {
	// The fast path, inlined into the caller: a quiet Closed success.
	if b := p.b; b != nil && b.quiet(p.word) {
		p.b = nil
		return true
	}
	return p.finish(Success, nil)
}

// Failure records a failure with err (which may be nil), unclassified, and
// reports whether it counted; a trip's [OpenError.Cause] is err.
func (p *Permit) Failure(err error) bool { return p.finish(Failure, err) }

// Ignore releases the permit without a verdict, freeing a probe slot.
func (p *Permit) Ignore() { p.finish(Ignored, nil) }

// Done records err as judged by [Classify] and [Config.IsFailure] and
// reports whether it counted. Prefer [Permit.DoneContext].
func (p *Permit) Done(err error) bool {
	if err == nil {
		return p.Success()
	}
	return p.classified(Classify(err), err)
}

// DoneContext is [Permit.Done] judged by [ClassifyContext] instead.
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
	if o == Failure && p.b.set.isFailure != nil && !p.isFailure(err) {
		o = Success
	}
	return p.finish(o, err)
}

// isFailure asks Config.IsFailure about err. If IsFailure panics, the
// permit records the failure ErrPanicked and the panic continues, never
// recovered, so its stack is kept (the way of x/sync/singleflight).
func (p *Permit) isFailure(err error) bool {
	normal := false
	defer func() {
		if !normal {
			p.finish(Failure, ErrPanicked)
		}
	}()
	failure := p.b.set.isFailure(err)
	normal = true
	return failure
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

// Outcome is how a finished call counts.
type Outcome uint8

const (
	// Success is a call that shows the dependency is healthy.
	Success Outcome = iota
	// Failure is a call that shows the dependency is unhealthy.
	Failure
	// Ignored is a call that says nothing about the dependency (one the
	// caller cancelled, say): not counted.
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

// Classify judges err without its call's context: nil is a Success, an
// error matching [context.Canceled] (and not [ErrOpen]) is Ignored, and
// any other is a Failure.
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

// ClassifyContext judges err from a call made with ctx, as the layers and
// [Run] do: nil is a Success, an error after ctx was cancelled is Ignored,
// any other is a Failure. A nil ctx falls back to [Classify].
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
