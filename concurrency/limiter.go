package concurrency

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/tuned"
	"github.com/rampart-go/rampart/observe"
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
// refuses it. A nil *Limiter is the same: it has no slots, and its
// methods behave as the zero Limiter's (SetMax is an error).
type Limiter struct {
	// sem has room for math.MaxInt64 units, of which the Limiter itself
	// holds all but Max (spare): SetMax changes the limit by giving spare
	// units back or taking more.
	sem *semaphore.Weighted
	max atomic.Int64
	// inFlight counts held slots. It is incremented after a slot is taken
	// from sem and decremented before the slot is given back, so it never
	// exceeds max but after SetMax lowers it (until the calls holding the
	// slots owed release them, see debt); it may briefly read one low
	// while a slot changes hands.
	inFlight atomic.Int64
	// reserved counts the slots of the critical reserve held: see
	// ReadyFor.
	reserved atomic.Int64
	// limited is returned for every refusal in Refuse mode, so refusing
	// (the path that runs under overload) allocates nothing. It is never
	// modified.
	limited *LimitedError

	// debt is how many slots a smaller Max still has to take back: a
	// Release pays it (under tune's lock) instead of freeing the slot.
	// Written under tune's lock; read by Release.
	debt atomic.Int64
	// tune serializes SetMax and holds what it needs; see SetMax.
	tune struct {
		sync.Mutex
		spare int64 // units of sem the Limiter holds
	}
	// watchers are the Observers of the layers built with the Limiter,
	// told of each SetMax.
	watchers tuned.Watchers

	// critical holds the critical calls waiting with the reserve taken,
	// oldest first: a reserved slot given back goes to the first of them
	// (see criticality.go). critWaiting is its length, for give to read
	// without the lock.
	critical struct {
		sync.Mutex
		waiters list.List // of *critWaiter
	}
	critWaiting atomic.Int64
}

// noSlots is the refusal of the zero Limiter.
var noSlots = &LimitedError{Wait: rampart.Forever}

// New returns a Limiter with max slots. It returns an error naming max when
// max < 1.
func New(max int) (*Limiter, error) {
	if max < 1 {
		return nil, fmt.Errorf("concurrency: max must be >= 1, got %d", max)
	}
	l := &Limiter{sem: semaphore.NewWeighted(math.MaxInt64), limited: &LimitedError{}}
	l.tune.spare = math.MaxInt64 - int64(max)
	l.sem.TryAcquire(l.tune.spare) // nobody else has it yet
	l.max.Store(int64(max))
	return l, nil
}

// Max returns the number of slots.
func (l *Limiter) Max() int {
	if l == nil {
		return 0
	}
	return int(l.max.Load())
}

// SetMax changes the number of slots to max while calls flow, or returns
// an error naming max when max < 1 (or l is nil or a zero Limiter), changing
// nothing. A larger max frees the new slots at once, to the callers
// waiting first. A smaller one takes back the free slots at once and the
// others as the calls holding them release them: until InFlight is below
// the new Max no call gets a slot (in Wait mode they wait, in order), and
// meanwhile InFlight exceeds Max. A larger max first forgives the slots
// a smaller one is still owed. Each layer built with l that has an
// Observer is told with an event of kind [observe.Tuned] (Source
// Concurrency, the layer's Name); l keeps those Observers as long as it
// lives. Safe for concurrent use.
func (l *Limiter) SetMax(max int) error {
	if l == nil {
		return errors.New("concurrency: SetMax of a nil *Limiter")
	}
	if max < 1 {
		return fmt.Errorf("concurrency: max must be >= 1, got %d", max)
	}
	if l.sem == nil {
		return errors.New("concurrency: SetMax of a zero Limiter: make it with New")
	}
	t := &l.tune
	t.Lock()
	debt := l.debt.Load()
	held := t.spare + debt // what the Limiter holds once its debt is paid
	switch want := math.MaxInt64 - int64(max); {
	case want < held: // more slots: forgive debt first, then free units
		forgiven := min(debt, held-want)
		debt -= forgiven
		if n := held - forgiven - want; n > 0 {
			l.sem.Release(n)
			t.spare -= n
		}
	case want > held: // fewer: take the free slots, owe the rest
		n := want - held
		for n > 0 && l.sem.TryAcquire(1) {
			t.spare++
			n--
		}
		debt += n
	}
	l.debt.Store(debt)
	l.max.Store(int64(max))
	t.Unlock()
	l.watchers.Tell(observe.Event{Source: observe.Concurrency})
	return nil
}

// InFlight returns how many slots are held right now, between 0 and Max
// (more than Max after [Limiter.SetMax] lowered it, until enough calls
// release their slots), plus the slots of the critical reserve critical calls hold (see the
// package documentation, Criticality). It is two atomic loads, cheap
// enough for metrics on every call.
func (l *Limiter) InFlight() int {
	if l == nil {
		return 0
	}
	return int(l.inFlight.Load() + l.reserved.Load())
}

// Ready reports whether a slot is free, so that a call arriving now would
// not have to wait. It is advisory: another goroutine may take the slot
// before the caller does. Package loadshed uses it to refuse work instead
// of queueing it (Tower's load_shed).
func (l *Limiter) Ready() bool { return l != nil && l.inFlight.Load() < l.max.Load() }

// Acquire takes a slot, blocking until one is free or ctx is done. Callers
// waiting for a slot get one in the order they called Acquire. On success
// it returns nil, and the caller must call [Limiter.Release] once when its
// work is done.
//
// When ctx is done first, or is already done when Acquire is called (even
// if a slot is free), Acquire takes no slot and returns an error wrapping
// ctx.Err(), so [errors.Is] finds [context.Canceled] or
// [context.DeadlineExceeded]; that error does not match [ErrLimited]. The
// zero Limiter, and a nil one, never blocks: it returns a
// [*LimitedError] matching ErrLimited whose RetryAfter says no slot will
// ever free.
//
// Acquire allocates nothing when a slot is free.
func (l *Limiter) Acquire(ctx context.Context) error {
	if l == nil || l.sem == nil {
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
	if l == nil || l.sem == nil || !l.sem.TryAcquire(1) {
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
	if l != nil && decrementHeld(&l.inFlight) {
		if l.debt.Load() > 0 && l.payDebt() {
			return
		}
		l.sem.Release(1)
	}
}

// payDebt keeps a released slot for a smaller Max still owed, and reports
// whether it did.
func (l *Limiter) payDebt() bool {
	l.tune.Lock()
	defer l.tune.Unlock()
	if l.debt.Load() == 0 {
		return false
	}
	l.debt.Add(-1)
	l.tune.spare++
	return true
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
	p, done, critical, err := l.takeBy(ctx)
	if done {
		return p, err
	}
	if mode == Wait && critical {
		return l.waitCritical(ctx)
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

func (l *Limiter) give(p Permit, _ bool) {
	if p.start == reservedSlot {
		l.reserved.Add(-1)
		if l.critWaiting.Load() > 0 {
			l.handReserve()
		}
		return
	}
	l.Release()
}
