package concurrency

import (
	"context"
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
// returns done when it took a slot or refused the call.
func (l *Limiter) takeBy(ctx context.Context) (p Permit, err error, done bool) {
	m := l.max.Load()
	if l.inFlight.Load() < sheddableShare(m) || ctx.Err() != nil {
		return Permit{}, nil, false
	}
	switch rampart.CriticalityOf(ctx) {
	case rampart.Sheddable:
		return Permit{}, l.limited, true
	case rampart.Critical:
		if l.TryAcquire() {
			return Permit{}, nil, true
		}
		for r := l.reserved.Load(); r < criticalReserve(m); r = l.reserved.Load() {
			if l.reserved.CompareAndSwap(r, r+1) {
				return Permit{start: reservedSlot}, nil, true
			}
		}
	}
	return Permit{}, nil, false
}

// ReadyFor reports whether a call with ctx's criticality would get a slot
// now without waiting, by the rule of the package documentation; for a
// default call it is [AdaptiveLimiter.Ready]. It is what package loadshed
// asks when it is given an AdaptiveLimiter.
func (l *AdaptiveLimiter) ReadyFor(ctx context.Context) bool {
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
// returns done when it took a slot or refused the call.
func (l *AdaptiveLimiter) takeBy(ctx context.Context) (p Permit, err error, done bool) {
	lim := l.limit.Load()
	if lim == 0 || l.inFlight.Load() < sheddableShare(lim) || ctx.Err() != nil {
		return Permit{}, nil, false
	}
	switch rampart.CriticalityOf(ctx) {
	case rampart.Sheddable:
		return Permit{}, l.refusal.Load(), true
	case rampart.Critical:
		bound := lim + criticalReserve(lim)
		for {
			n := l.inFlight.Load()
			if n >= bound {
				break
			}
			if l.inFlight.CompareAndSwap(n, n+1) {
				return l.permit(n + 1), nil, true
			}
		}
	}
	return Permit{}, nil, false
}
