package limit

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// ErrLimited is the sentinel that every refusal by the limit layer in
// [Reject] mode matches with [errors.Is]: all [Limiter.Max] slots were taken.
// The inner service was not called. The refusal is returned as a
// [*LimitedError].
var ErrLimited = errors.New("limit: concurrency limit reached")

// LimitedError is the error the limit layer returns in [Reject] mode when
// every slot is taken. It matches [ErrLimited] with [errors.Is].
//
// It does not implement RetryDelay: a concurrency limit cannot know when a
// slot frees, so it gives no hint to wait for.
type LimitedError struct {
	// Max is the limit that was reached: the number of calls in flight.
	Max int
}

// Error reports the limit that was reached.
func (e *LimitedError) Error() string {
	return fmt.Sprintf("limit: concurrency limit reached (%d in flight)", e.Max)
}

// Is reports whether target is [ErrLimited].
func (e *LimitedError) Is(target error) bool { return target == ErrLimited }

// Limiter bounds how many calls run at once. It is shared state: every layer
// built with the same Limiter draws from the same Max slots. A Limiter is
// safe for concurrent use; New is the only way to make a usable one. The
// zero Limiter has no slots: Max and InFlight are 0, Ready is false (so a
// loadshed layer watching it refuses every call), and [NewLayer] rejects
// it.
type Limiter struct {
	sem *semaphore.Weighted
	max int
	// inFlight counts held slots. It is incremented after a slot is taken
	// from sem and decremented before the slot is given back, so it never
	// exceeds max; it may briefly read one low while a slot changes hands.
	inFlight atomic.Int64
	// limited is returned for every refusal, so refusing (the path that runs
	// under overload) allocates nothing. It is never modified.
	limited *LimitedError
}

// New returns a Limiter with max slots. It returns an error naming max when
// max < 1.
func New(max int) (*Limiter, error) {
	if max < 1 {
		return nil, fmt.Errorf("limit: max must be >= 1, got %d", max)
	}
	return &Limiter{
		sem:     semaphore.NewWeighted(int64(max)),
		max:     max,
		limited: &LimitedError{Max: max},
	}, nil
}

// Max returns the number of slots.
func (l *Limiter) Max() int { return l.max }

// InFlight returns how many slots are held right now, between 0 and Max. It
// is a single atomic load, cheap enough for metrics on every call.
func (l *Limiter) InFlight() int { return int(l.inFlight.Load()) }

// Ready reports whether a slot is free, so that a call arriving now would
// not have to wait. It is advisory: another goroutine may take the slot
// before the caller does. Package loadshed uses it to refuse work instead
// of queueing it (Tower's load_shed).
func (l *Limiter) Ready() bool { return l.inFlight.Load() < int64(l.max) }

// acquire takes a slot. In Wait mode it blocks until a slot frees or ctx is
// done; in Reject mode it fails at once with l.limited. A ctx already done
// takes no slot, in either mode.
func (l *Limiter) acquire(ctx context.Context, mode Mode) error {
	if mode == Reject {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !l.sem.TryAcquire(1) {
			return l.limited
		}
	} else if err := l.sem.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("limit: waiting for a slot: %w", err)
	}
	l.inFlight.Add(1)
	return nil
}

// release gives back a slot taken by acquire.
func (l *Limiter) release() {
	l.inFlight.Add(-1)
	l.sem.Release(1)
}
