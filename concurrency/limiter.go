package concurrency

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/rampart-go/rampart"
)

// Limiter bounds how many calls run at once: it has Max slots, and a call
// runs in one. It is shared state: every layer built with the same Limiter,
// and every direct caller of [Limiter.Acquire], draws from the same slots.
// It is usable on its own, as [semaphore.Weighted] (on which it is built)
// is: Acquire or TryAcquire a slot, do the work, Release it.
//
// A Limiter is safe for concurrent use; [New] is the only way to make a
// usable one. The zero Limiter has no slots: Max and InFlight are 0, Ready
// is false (so a loadshed layer watching it refuses every call), Acquire
// refuses at once, TryAcquire fails, Release does nothing, and [NewLayer]
// refuses it.
type Limiter struct {
	sem *semaphore.Weighted
	max int
	// inFlight counts held slots. It is incremented after a slot is taken
	// from sem and decremented before the slot is given back, so it never
	// exceeds max; it may briefly read one low while a slot changes hands.
	inFlight atomic.Int64
	// reserved counts the slots of the critical reserve held: see
	// ReadyFor.
	reserved atomic.Int64
	// limited is returned for every refusal in Refuse mode, so refusing
	// (the path that runs under overload) allocates nothing. It is never
	// modified.
	limited *LimitedError
}

// noSlots is the refusal of the zero Limiter.
var noSlots = &LimitedError{Wait: rampart.Forever}

// New returns a Limiter with max slots. It returns an error naming max when
// max < 1.
func New(max int) (*Limiter, error) {
	if max < 1 {
		return nil, fmt.Errorf("concurrency: max must be >= 1, got %d", max)
	}
	return &Limiter{
		sem:     semaphore.NewWeighted(int64(max)),
		max:     max,
		limited: &LimitedError{},
	}, nil
}

// Max returns the number of slots.
func (l *Limiter) Max() int { return l.max }

// InFlight returns how many slots are held right now, between 0 and Max,
// plus the slots of the critical reserve critical calls hold (see the
// package documentation, Criticality). It is two atomic loads, cheap
// enough for metrics on every call.
func (l *Limiter) InFlight() int { return int(l.inFlight.Load() + l.reserved.Load()) }

// Ready reports whether a slot is free, so that a call arriving now would
// not have to wait. It is advisory: another goroutine may take the slot
// before the caller does. Package loadshed uses it to refuse work instead
// of queueing it (Tower's load_shed).
func (l *Limiter) Ready() bool { return l.inFlight.Load() < int64(l.max) }

// Acquire takes a slot, blocking until one is free or ctx is done. Callers
// waiting for a slot get one in the order they called Acquire. On success
// it returns nil, and the caller must call [Limiter.Release] once when its
// work is done.
//
// When ctx is done first, or is already done when Acquire is called (even
// if a slot is free), Acquire takes no slot and returns an error wrapping
// ctx.Err(), so [errors.Is] finds [context.Canceled] or
// [context.DeadlineExceeded]; that error does not match [ErrLimited]. The
// zero Limiter never blocks: it returns a [*LimitedError] matching
// ErrLimited whose RetryAfter says no slot will ever free.
//
// Acquire allocates nothing when a slot is free.
func (l *Limiter) Acquire(ctx context.Context) error {
	if l.sem == nil {
		return noSlots
	}
	if err := l.sem.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("concurrency: waiting for a slot: %w", err)
	}
	l.inFlight.Add(1)
	return nil
}

// TryAcquire takes a slot if one is free and nobody is waiting in
// Acquire, and reports whether it did. It never blocks. After it returns
// true the caller must call [Limiter.Release] once when its work is done.
func (l *Limiter) TryAcquire() bool {
	if l.sem == nil || !l.sem.TryAcquire(1) {
		return false
	}
	l.inFlight.Add(1)
	return true
}

// Release gives back a slot taken by Acquire or TryAcquire, waking the
// first caller waiting in Acquire. It never blocks and never panics.
//
// A Release while no slot is held is ignored, so the Limiter never hands
// out more than Max slots because of it. An extra Release while other
// callers hold slots cannot be told from theirs, though: it frees one of
// them early (more than Max calls may then run until that caller's own
// Release, which is ignored). Release once per successful acquisition.
func (l *Limiter) Release() {
	if decrementHeld(&l.inFlight) {
		l.sem.Release(1)
	}
}

// decrementHeld takes one from the count of held slots n unless it is
// zero, and reports whether it did: a release with no slot held gives
// nothing back.
func decrementHeld(n *atomic.Int64) bool {
	for {
		v := n.Load()
		if v == 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

func (l *Limiter) valid() error {
	if l == nil {
		return errors.New("concurrency: limiter must not be nil")
	}
	if l.sem == nil {
		return errors.New("concurrency: limiter must be made by New, got a zero Limiter")
	}
	return nil
}

// take takes a slot as the mode says: in Wait mode it blocks until a slot
// frees or ctx is done; in Refuse mode it fails at once with the limiter's
// shared refusal. A ctx already done takes no slot, in either mode. A
// Limiter needs nothing in the Permit.
func (l *Limiter) take(ctx context.Context, mode Mode) (Permit, error) {
	if p, err, done := l.takeBy(ctx); done {
		return p, err
	}
	if mode == Wait {
		return Permit{}, l.Acquire(ctx)
	}
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	if !l.TryAcquire() {
		return Permit{}, l.limited
	}
	return Permit{}, nil
}

func (l *Limiter) give(p Permit) {
	if p.start == reservedSlot {
		l.reserved.Add(-1)
		return
	}
	l.Release()
}
