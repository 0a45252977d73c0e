package circuitbreaker

import (
	"time"
)

// trip opens the breaker from Closed or HalfOpen. The cool-down starts
// again from ResetTimeout after Closed and grows after HalfOpen.
// Called with mu held.
func (b *Breaker) trip(from State, cause error) {
	if from == Closed {
		b.cooldown = b.set.cooldown
	} else {
		b.cooldown = b.set.next(b.cooldown)
	}
	b.enter(Open, cause, b.wall())
}

// enter moves the breaker to state to, bumps the epoch, publishes the new
// period and queues the transition for the listeners. at is the
// transition's wall-clock time. Called with mu held.
func (b *Breaker) enter(to State, cause error, at time.Time) {
	old := b.word.Load()
	w := (old>>epochShift+1)<<epochShift | old&(flagTimed|flagMade) | uint64(to)
	name := b.set.name
	per := &period{word: w, name: name, cause: cause}
	switch to {
	case Open:
		if b.cooldown == Forever {
			per.until = never
			per.fixed = &OpenError{Name: name, RetryAfter: Forever, Cause: cause}
		} else {
			per.until = addSat(b.mono(), b.cooldown)
		}
	case HalfOpen:
		per.fixed = &OpenError{Name: name, Cause: cause}
		b.probes = b.probes[:0]
		b.succeeded, b.failed, b.lastFailure = 0, 0, nil
		b.tracker.Reset(HalfOpen)
	case ForcedOpen:
		per.fixed = &OpenError{Name: name, RetryAfter: Forever, Cause: cause}
	case Closed:
		b.cooldown = b.set.cooldown
		b.lastFailure = nil
		b.tracker.Reset(Closed)
	}
	b.period.Store(per)
	b.word.Store(w)
	if stateOf(old) == to && to != ForcedOpen {
		return // a Reset that keeps the state: a new epoch, no transition
	}
	tr := Transition{Name: name, From: stateOf(old), To: to, Time: at}
	if to == Open || to == ForcedOpen {
		tr.Cause = cause
	}
	b.events.push(tr)
}

// Reset closes the breaker, clears the policy's history and the growth of
// the cool-down, and starts a new epoch, so that no permit issued before
// the reset, probe or not, can change the state afterwards. Listeners
// see a transition to Closed unless the breaker was already Closed. While
// a [Switch] forces the breaker, Reset clears the history but leaves the
// forced state: the switch owns it until released. Safe for concurrent use.
func (b *Breaker) Reset() {
	b.mu.Lock()
	defer b.unlock()
	b.setUp()
	switch stateOf(b.word.Load()) {
	case ForcedOpen, ForcedClosed:
		b.cooldown = b.set.cooldown
		b.tracker.Reset(Closed)
	default:
		b.enter(Closed, nil, b.wall())
	}
}
