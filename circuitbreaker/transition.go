package circuitbreaker

import (
	"time"

	"github.com/rampart-go/rampart"
)

// trip opens the breaker from Closed or HalfOpen. The cool-down starts
// again from CoolDown after Closed and grows after HalfOpen.
// Called with mu held.
func (b *Breaker) trip(from State, cause error) {
	if from == Closed {
		b.cooldown = b.set.cooldown
		c := countsOf(b.tracker)
		if c.Calls == 0 && c.ConsecutiveFailures > 0 {
			// A run of failures: that many calls, all failed.
			c.Calls, c.Failures = c.ConsecutiveFailures, c.ConsecutiveFailures
		}
		b.tripCounts = c
	} else {
		b.cooldown = b.set.next(b.cooldown)
		b.tripCounts = Counts{Calls: b.succeeded + b.failed, Failures: b.failed}
	}
	b.enter(Open, cause, b.wall())
	b.tripCounts = Counts{}
}

// enter moves the breaker to state to, bumps the epoch, publishes the new
// period and queues the transition for the listeners. at is the
// transition's wall-clock time. An Open lasts the current cool-down.
// Called with mu held.
func (b *Breaker) enter(to State, cause error, at time.Time) {
	b.enterWith(to, cause, at, false, b.cooldown)
}

// enterWith is enter for a period that remote says whether ApplyRemote
// imposed, and that, if Open, lasts open. A HalfOpen that follows a
// remote Open is remote too. Called with mu held.
func (b *Breaker) enterWith(to State, cause error, at time.Time, remote bool, open time.Duration) {
	if b.timer != nil {
		b.timer.Stop() // a callback already running finds its period gone
		b.timer = nil
	}
	old := b.word.Load()
	w := (old>>epochShift+1)<<epochShift | old&(flagTimed|flagMade) | uint64(to)
	name := b.set.name
	per := &period{word: w, cause: cause, remote: remote}
	switch to {
	case Open:
		per.reject = &OpenError{Name: name, Cause: cause, b: b}
		per.until = addSat(b.mono(), open)
		if open == rampart.Forever || per.until == never {
			per.until = never
			per.reject.b, per.reject.wait = nil, rampart.Forever
		} else if lead := readyLead(open); lead > 0 {
			per.reject.until = per.until
			b.timer = b.afterFunc(lead, func() { b.ready(per) })
		} else {
			per.reject.until = per.until
			w |= flagReady // no cool-down: the next caller reads the clock
		}
	case HalfOpen:
		per.remote = b.period.Load().remote
		per.reject = &OpenError{Name: name, Cause: cause}
		b.probes = b.probes[:0]
		b.succeeded, b.failed, b.lastFailure = 0, 0, nil
		b.tracker.Reset(HalfOpen)
	case ForcedOpen:
		per.reject = &OpenError{Name: name, Cause: cause, wait: rampart.Forever, forced: true}
	case Closed:
		b.cooldown = b.set.cooldown
		b.lastFailure = nil
		b.tracker.Reset(Closed)
	}
	b.period.Store(per)
	b.word.Store(w)
	if stateOf(old) == to && to != ForcedOpen {
		if to == Open && remote {
			// A remote Open that moves the end of an Open: no transition
			// for the listeners (Subscribe skips it), but the Observer
			// is told of the new end, so that what it reports of the
			// breaker (half-open once the cool-down has ended) follows
			// State rather than the end the Open began with.
			b.events.push(Transition{Name: name, From: Open, To: Open, Time: at, Cause: cause, RetryAfter: open, Remote: true, moved: true})
		}
		return // a Reset that keeps the state: a new epoch, no transition
	}
	tr := Transition{Name: name, From: stateOf(old), To: to, Time: at, Remote: remote}
	switch to {
	case Open:
		tr.Cause, tr.RetryAfter, tr.Counts = cause, open, b.tripCounts
	case ForcedOpen:
		tr.Cause = cause
	}
	b.events.push(tr)
}

// readyLead returns when, after an Open period with cool-down d starts, its
// timer sets flagReady: an eighth of d (at most a second) before the end,
// so that a timer run late by the scheduler still marks the period before
// its end, and within synctest's virtual time strictly before it. Zero
// means at once.
func readyLead(d time.Duration) time.Duration {
	return d - min(d/8, time.Second)
}

// ready is the timer of the Open period per: unless the breaker has left
// that period, it sets flagReady, after which refusals read the clock and
// the first caller after the cool-down becomes a probe.
func (b *Breaker) ready(per *period) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.period.Load() != per {
		return // stopped too late: the breaker has moved on
	}
	b.timer = nil
	b.word.Store(b.word.Load() | flagReady)
}

// Reset closes the breaker and clears its history and cool-down growth;
// permits issued before it no longer count. A forced state stays until
// its [Switch] is released. Reset of a nil b does nothing. Safe for
// concurrent use.
func (b *Breaker) Reset() {
	if b == nil {
		return
	}
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
