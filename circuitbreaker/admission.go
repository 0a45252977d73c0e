package circuitbreaker

import (
	"context"
	"errors"
	"time"

	"github.com/rampart-go/rampart/observe"
)

// TryAcquire asks to make one call, without blocking: it returns a
// [Permit] to finish once (a probe left unfinished loses its slot after
// [Config.ProbeLease]), or an [*OpenError], which it reports to the
// breaker's Observer as refused, with [context.Background]. A nil b
// returns the zero (finished) Permit and an error saying so.
func (b *Breaker) TryAcquire() (Permit, error) {
	if b == nil {
		return Permit{}, errNilTryAcquire
	}
	// The Closed fast path: one atomic load and one comparison, which also
	// rules out a policy that needs the clock (flagTimed) and a zero
	// Breaker not yet set up (flagMade).
	w := b.word.Load()
	if w&fastMask == fastWord {
		return Permit{b: b, word: w}, nil
	}
	// The Open fast path: an Open period whose cool-down is not near its
	// end (flagReady clear) refuses with the period's prebuilt error, if
	// the period read is the word's (else a transition is being
	// published, and tryAcquire looks again). Without an Observer it costs
	// one more load and two comparisons; the report is outlined.
	if w&rejectMask == uint64(Open) {
		if per := b.period.Load(); per.word == w {
			if b.set.observer != nil {
				b.observe(context.Background(), observe.Rejected, per.reject, 0)
			}
			return Permit{}, per.reject
		}
	}
	return b.tryAcquire(context.Background())
}

// errNilTryAcquire is what TryAcquire of a nil *Breaker returns.
var errNilTryAcquire = errors.New("circuitbreaker: TryAcquire of a nil *Breaker (build one with circuitbreaker.New)")

// tryAcquire is TryAcquire after the Closed fast path, reporting a
// refusal to the Observer with ctx.
func (b *Breaker) tryAcquire(ctx context.Context) (Permit, error) {
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
			return b.permit(w), nil
		case Open, ForcedOpen:
			per := b.period.Load()
			if per.word != w&^flagReady {
				continue // a transition is being published; look again
			}
			// Before the timer has marked the end of the cool-down as
			// near, the refusal is the period's, without a clock read.
			if w&flagReady == 0 || per.until-b.mono() > 0 {
				if b.set.observer != nil { // checked here: observe is not inlined
					b.observe(ctx, observe.Rejected, per.reject, 0)
				}
				return Permit{}, per.reject
			}
			return b.acquireSlow(ctx)
		default: // HalfOpen
			return b.acquireSlow(ctx)
		}
	}
}

// acquireSlow admits a call with the lock held: in HalfOpen, and at the end
// of a cool-down, where the Open → HalfOpen transition and the admission of
// the caller as the first probe are one atomic step. A refusal is
// reported to the Observer with ctx once the lock is released.
func (b *Breaker) acquireSlow(ctx context.Context) (_ Permit, err error) {
	defer func() { // runs after the unlock
		if err != nil {
			b.observe(ctx, observe.Rejected, err, 0)
		}
	}()
	b.mu.Lock()
	defer b.unlock()
	now := b.mono()
	w := b.word.Load()
	per := b.period.Load()
	switch stateOf(w) {
	case Closed, ForcedClosed:
		return b.permit(w), nil
	case ForcedOpen:
		return Permit{}, per.reject
	case Open:
		if now < per.until {
			return Permit{}, per.reject
		}
		// The cool-down ended at per.until: the transition happened then.
		b.enter(HalfOpen, per.cause, b.wallAt(per.until, now))
		w = b.word.Load()
		per = b.period.Load()
	}
	// HalfOpen.
	b.expireProbes(now)
	if len(b.probes) >= b.set.maxProbes {
		return Permit{}, per.reject
	}
	b.ticket++
	p := probe{ticket: b.ticket, expiry: addSat(now, b.set.lease)}
	if b.timing == timingLatency {
		p.start = now
	}
	b.probes = append(b.probes, p)
	return Permit{b: b, word: w, aux: b.ticket}, nil
}

// permit returns a permit of a Closed or ForcedClosed period for state
// word w, reading the clock only if the policy measures latency.
func (b *Breaker) permit(w uint64) Permit {
	var start int64
	if b.timing == timingLatency {
		start = b.mono()
	}
	return Permit{b: b, word: w, aux: start}
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
