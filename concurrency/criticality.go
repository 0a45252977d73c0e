package concurrency

import (
	"context"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
)

// sheddableShare returns how many slots sheddable calls may hold under a
// limit of n.
func sheddableShare(n int64) int64 { return max(1, n-(n+3)/4) }

// criticalReserve returns how many slots beyond a limit of n only
// critical calls may take.
func criticalReserve(n int64) int64 { return max(1, n) }

// reservedSlot is the start of a Permit of a [Limiter] that holds a slot
// of the critical reserve.
const reservedSlot time.Duration = -2

// ReadyFor reports whether a call with ctx's criticality would get a slot
// now without waiting, by the rule of the package documentation; for a
// default call it is [Limiter.Ready]. It is what package loadshed asks
// when it is given a Limiter.
func (l *Limiter) ReadyFor(ctx context.Context) bool {
	if l == nil {
		return false
	}
	m := l.max.Load()
	n := l.inFlight.Load()
	if m == 0 {
		return false
	}
	if n < sheddableShare(m) {
		return true
	}
	switch rampart.CriticalityOf(ctx) {
	case rampart.Sheddable:
		return false
	case rampart.Critical:
		return n < m || l.reserved.Load() < criticalReserve(m)
	}
	return n < m
}

// takeBy applies the criticality rule before the ordinary take: it
// returns done when it took a slot or refused the call, and critical for
// a critical call that found the reserve taken too, which waits for a
// slot of either kind (see waitCritical). Below the sheddable share it
// takes a slot without reading the criticality; if others took the last
// ones since it looked, the rule applies as at the limit.
func (l *Limiter) takeBy(ctx context.Context) (p Permit, done, critical bool, err error) {
	m := l.max.Load()
	if ctx.Err() != nil {
		return Permit{}, false, false, nil
	}
	if l.inFlight.Load() < sheddableShare(m) && l.TryAcquire() {
		return Permit{}, true, false, nil
	}
	switch rampart.CriticalityOf(ctx) {
	case rampart.Sheddable:
		return Permit{}, true, false, l.limited
	case rampart.Critical:
		if l.TryAcquire() {
			return Permit{}, true, false, nil
		}
		if l.critWaiting.Load() == 0 && l.takeReserve() { // not ahead of critical waiters
			return Permit{start: reservedSlot}, true, false, nil
		}
		return Permit{}, false, true, nil
	}
	return Permit{}, false, false, nil
}

// takeReserve takes a slot of the critical reserve if one is free.
func (l *Limiter) takeReserve() bool {
	for r := l.reserved.Load(); r < criticalReserve(l.max.Load()); r = l.reserved.Load() {
		if l.reserved.CompareAndSwap(r, r+1) {
			return true
		}
	}
	return false
}

// critWaiter is a critical call waiting in [Limiter.waitCritical].
type critWaiter struct {
	cancel context.CancelFunc // ends its wait for an ordinary slot
	handed bool               // given a reserved slot; guarded by Limiter.critical
}

// waitCritical waits, for a critical call that found the reserve taken,
// for whichever frees first: an ordinary slot, in line with every other
// waiting call, or a slot of the reserve, which goes to the critical
// calls waiting here before any ordinary waiter, in arrival order.
func (l *Limiter) waitCritical(ctx context.Context) (Permit, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &critWaiter{cancel: cancel}
	l.critical.Lock()
	l.critWaiting.Add(1)
	elem := l.critical.waiters.PushBack(w)
	// Counted before this second look, so a reserved slot given back
	// after it is handed here (give reads critWaiting after freeing it).
	if l.takeReserve() {
		l.critical.waiters.Remove(elem)
		l.critWaiting.Add(-1)
		l.critical.Unlock()
		return Permit{start: reservedSlot}, nil
	}
	l.critical.Unlock()

	err := l.sem.Acquire(wctx, 1)
	l.critical.Lock()
	handed := w.handed
	if !handed {
		l.critical.waiters.Remove(elem)
		l.critWaiting.Add(-1)
	}
	l.critical.Unlock()
	switch {
	case handed:
		if err == nil {
			l.sem.Release(1) // an ordinary slot came too: one is enough
		}
		if ctx.Err() != nil {
			l.give(Permit{start: reservedSlot}, false) // to the next in line
			return Permit{}, fmt.Errorf("concurrency: waiting for a slot: %w", ctx.Err())
		}
		return Permit{start: reservedSlot}, nil
	case err == nil:
		l.inFlight.Add(1)
		return Permit{}, nil
	}
	return Permit{}, fmt.Errorf("concurrency: waiting for a slot: %w", ctx.Err())
}

// handReserve hands a free slot of the reserve to the first critical
// call waiting for one, if any.
func (l *Limiter) handReserve() {
	l.critical.Lock()
	defer l.critical.Unlock()
	e := l.critical.waiters.Front()
	if e == nil || !l.takeReserve() {
		return
	}
	w := l.critical.waiters.Remove(e).(*critWaiter)
	l.critWaiting.Add(-1)
	w.handed = true
	w.cancel()
}

// ReadyFor reports whether a call with ctx's criticality would get a slot
// now without waiting, by the rule of the package documentation; for a
// default call it is [AdaptiveLimiter.Ready]. It is what package loadshed
// asks when it is given an AdaptiveLimiter.
func (l *AdaptiveLimiter) ReadyFor(ctx context.Context) bool {
	if l == nil {
		return false
	}
	lim := l.limit.Load()
	n := l.inFlight.Load()
	if lim == 0 {
		return false
	}
	if n < sheddableShare(lim) && l.waiting.Load() == 0 {
		return true
	}
	switch rampart.CriticalityOf(ctx) {
	case rampart.Sheddable:
		return false
	case rampart.Critical:
		return n < lim+criticalReserve(lim)
	}
	return l.Ready()
}

// takeBy applies the criticality rule before the ordinary take: it
// returns done when it took a slot or refused the call, and critical for
// a critical call that found the reserve taken too, which waits in a line
// of its own, served first.
func (l *AdaptiveLimiter) takeBy(ctx context.Context) (p Permit, done, critical bool, err error) {
	lim := l.limit.Load()
	if lim == 0 || ctx.Err() != nil {
		return Permit{}, false, false, nil
	}
	if l.inFlight.Load() < sheddableShare(lim) {
		if p, ok := l.TryAcquire(); ok {
			return p, true, false, nil
		}
	}
	switch rampart.CriticalityOf(ctx) {
	case rampart.Sheddable:
		return Permit{}, true, false, l.refusal.Load()
	case rampart.Critical:
		if l.critWaiting.Load() == 0 { // ahead of ordinary waiters, not of critical ones
			if n, ok := l.takeSlotBelow(lim + criticalReserve(lim)); ok {
				return l.permit(n), true, false, nil
			}
		}
		return Permit{}, false, true, nil
	}
	return Permit{}, false, false, nil
}

// criticalBound is how many slots critical calls may hold: the limit and
// the reserve.
func (l *AdaptiveLimiter) criticalBound() int64 {
	lim := l.limit.Load()
	return lim + criticalReserve(lim)
}
