package circuitbreaker

import (
	"sync/atomic"
	"time"
)

// record finishes permit p with outcome o and reports whether the outcome
// counted. It is the one place outcomes enter the state machine.
// ForcedClosed permits and stale permits never count.
func (b *Breaker) record(p *Permit, o Outcome, err error) bool {
	if o == Success && b.quiet(p.word) {
		return true
	}
	return b.recordSlow(p, o, err)
}

// quiet reports whether a success on a permit issued under state word w
// can be counted without the lock: the permit is from the current Closed
// epoch and the tracker does not need the success (with Consecutive: no
// failures pending). It writes nothing. Were the epoch to change right
// after the load, the success is ordered before that change, which it
// preceded. A built-in policy's quiet counter is read directly, saving an
// interface call on the hottest path.
func (b *Breaker) quiet(w uint64) bool {
	return w&fastMask == fastWord && b.word.Load() == w && b.busy.Load() == 0
}

// quieter is implemented by built-in trackers that keep in an atomic
// counter whether a success in Closed would change anything: while the
// counter is zero it would not (WantsSuccess is false). For Consecutive the
// counter is the run of failures. A nil counter means the tracker has none.
type quieter interface{ quietCounter() *atomic.Int64 }

// wanting is the counter b.quiet reads when the tracker is not a quieter:
// never zero, so every success takes the slow path, which asks the tracker.
var wanting = func() *atomic.Int64 {
	var one atomic.Int64
	one.Store(1)
	return &one
}()

// recordSlow is record for everything but the fast path.
func (b *Breaker) recordSlow(p *Permit, o Outcome, err error) bool {
	switch stateOf(p.word) {
	case Closed:
		switch {
		case o == Ignored:
			return false
		case o == Success && b.word.Load() == p.word && !b.tracker.WantsSuccess():
			return true // quiet, but the policy is not Consecutive
		}
		call := b.call(p, o, err)
		b.mu.Lock()
		defer b.unlock()
		if b.word.Load() != p.word {
			return false // stale: the breaker changed state since
		}
		if o == Failure {
			b.lastFailure = err
		}
		if b.tracker.Record(call) {
			// A rate policy may trip on a success (the call that brings
			// the window to MinCalls): the cause is then the policy's
			// reason, or the last failure.
			cause := b.successCause(o)
			if cause == nil {
				cause = b.lastFailure
			}
			b.trip(Closed, cause)
		}
		return true
	case HalfOpen:
		call := b.call(p, o, err)
		b.mu.Lock()
		defer b.unlock()
		if b.word.Load() != p.word || !b.releaseProbe(p.ticket, b.mono()) {
			return false // stale, or its lease expired
		}
		if o == Ignored {
			return false
		}
		if o == Success {
			b.succeeded++
		} else {
			b.failed++
			b.lastFailure = err
		}
		v := b.tracker.Probe(call, Probes{
			InFlight:  len(b.probes),
			Succeeded: b.succeeded,
			Failed:    b.failed,
			Max:       b.set.maxProbes,
		})
		switch v {
		case VerdictClose:
			b.enter(Closed, nil, time.Now())
		case VerdictReopen:
			cause := b.successCause(o)
			if cause == nil {
				cause = b.lastFailure
			}
			if cause == nil {
				cause = b.period.Load().cause
			}
			b.trip(HalfOpen, cause)
		}
		return true
	}
	return false // ForcedClosed: nothing is recorded
}

// successCauser is implemented by built-in trackers that can trip or
// re-open on a success for a reason of their own: successCause returns that
// reason for the decision just made, or nil.
type successCauser interface{ successCause() error }

// successCause returns the tracker's reason for a trip or re-open decided
// on an outcome o, if o is a success and the tracker gives one.
func (b *Breaker) successCause(o Outcome) error {
	if sc, ok := b.tracker.(successCauser); ok && o == Success {
		return sc.successCause()
	}
	return nil
}

// call builds the Call for a tracker, reading the clock only if asked to.
func (b *Breaker) call(p *Permit, o Outcome, err error) Call {
	c := Call{Outcome: o, Err: err}
	if b.timing != TimingNone {
		c.Now = time.Now()
		if b.timing == TimingLatency {
			// One clock read: Now carries the monotonic reading.
			c.Latency = c.Now.Sub(b.base) - time.Duration(p.start)
		}
	}
	return c
}

// releaseProbe removes the probe with ticket t and reports whether it was
// still in flight at now: false if its lease has expired, whether or not an
// acquire has reclaimed its slot yet. Called with mu held.
func (b *Breaker) releaseProbe(t uint64, now int64) bool {
	for i, p := range b.probes {
		if p.ticket == t {
			last := len(b.probes) - 1
			b.probes[i] = b.probes[last]
			b.probes = b.probes[:last]
			return p.expiry > now
		}
	}
	return false
}
