package circuitbreaker

import "time"

// TryAcquire asks to make one call. It never blocks.
//
// On success the returned [Permit] must be finished with exactly one of
// [Permit.Success], [Permit.Failure], [Permit.Ignore], [Permit.Done] or
// [Permit.DoneContext]. A probe permit that is never finished gives up its
// slot after the configured ProbeLease.
//
// A rejection is an [*OpenError] (see there for RetryAfter and Cause),
// which matches [ErrOpen]. Callers rejected in the same millisecond may
// share one: treat it as read-only.
func (b *Breaker) TryAcquire() (Permit, error) {
	// The Closed fast path: one atomic load and one comparison, which also
	// rules out a policy that needs the clock (flagTimed) and a zero
	// Breaker not yet set up (flagMade).
	if w := b.word.Load(); w&fastMask == fastWord {
		return Permit{b: b, word: w}, nil
	}
	return b.tryAcquire()
}

// tryAcquire is TryAcquire after the Closed fast path.
func (b *Breaker) tryAcquire() (Permit, error) {
	for {
		w := b.word.Load()
		if w&flagMade == 0 { // a zero Breaker's first use
			b.mu.Lock()
			b.setUp()
			b.mu.Unlock()
			continue
		}
		switch stateOf(w) {
		case Closed, ForcedClosed:
			return b.permit(w, 0), nil
		case Open:
			per := b.period.Load()
			if per.word != w {
				continue // a transition is being published; look again
			}
			if per.fixed != nil {
				return Permit{}, per.fixed
			}
			if left := per.until - b.mono(); left > 0 {
				return Permit{}, per.rejection(left)
			}
			return b.acquireSlow()
		case ForcedOpen:
			per := b.period.Load()
			if per.word != w {
				continue
			}
			return Permit{}, per.fixed
		default: // HalfOpen
			return b.acquireSlow()
		}
	}
}

// rejection returns the Open rejection for a remaining cool-down of left
// nanoseconds (> 0), rounded up to a millisecond, reusing the last one
// built in this period when it has the same RetryAfter.
func (per *period) rejection(left int64) *OpenError {
	const ms = int64(time.Millisecond)
	r := time.Duration(left)
	if left <= never-ms {
		r = time.Duration((left + ms - 1) / ms * ms)
	}
	if e := per.last.Load(); e != nil && e.RetryAfter == r {
		return e
	}
	e := &OpenError{Name: per.name, RetryAfter: r, Cause: per.cause}
	per.last.Store(e)
	return e
}

// acquireSlow admits a call with the lock held: in HalfOpen, and at the end
// of a cool-down, where the Open → HalfOpen transition and the admission of
// the caller as the first probe are one atomic step.
func (b *Breaker) acquireSlow() (Permit, error) {
	b.mu.Lock()
	defer b.unlock()
	now := b.mono()
	w := b.word.Load()
	per := b.period.Load()
	switch stateOf(w) {
	case Closed, ForcedClosed:
		return b.permit(w, 0), nil
	case ForcedOpen:
		return Permit{}, per.fixed
	case Open:
		if per.fixed != nil {
			return Permit{}, per.fixed
		}
		if now < per.until {
			return Permit{}, per.rejection(per.until - now)
		}
		// The cool-down ended at per.until: the transition happened then.
		b.enter(HalfOpen, per.cause, b.wallAt(per.until, now))
		w = b.word.Load()
		per = b.period.Load()
	}
	// HalfOpen.
	b.expireProbes(now)
	if len(b.probes) >= b.set.maxProbes {
		return Permit{}, per.fixed
	}
	b.ticket++
	b.probes = append(b.probes, probe{ticket: b.ticket, expiry: addSat(now, b.set.lease)})
	return b.permit(w, b.ticket), nil
}

// permit returns a permit for state word w and probe ticket t, reading the
// clock only if the policy measures latency.
func (b *Breaker) permit(w, t uint64) Permit {
	var start int64
	if b.timing == TimingLatency {
		start = b.mono()
	}
	return Permit{b: b, word: w, ticket: t, start: start}
}

// expireProbes drops the probes whose lease ended at or before now.
// Called with mu held.
func (b *Breaker) expireProbes(now int64) {
	kept := b.probes[:0]
	for _, p := range b.probes {
		if p.expiry > now {
			kept = append(kept, p)
		}
	}
	b.probes = kept
}

// addSat returns t+d, saturating at never.
func addSat(t int64, d time.Duration) int64 {
	if int64(d) > never-t {
		return never
	}
	return t + int64(d)
}
