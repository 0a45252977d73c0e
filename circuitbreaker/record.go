package circuitbreaker

import (
	"context"
	"time"

	"github.com/rampart-go/rampart"
)

// record finishes a permit issued under state word w, with aux its
// Permit.aux, with outcome o and reports whether the outcome counted and,
// for the Observer, the call's duration d when the policy measures latency
// and the breaker has an Observer (zero otherwise, and for an ignored
// call). It is the one place outcomes enter the state machine.
// ForcedClosed permits and stale permits never count.
func (b *Breaker) record(w uint64, aux int64, o rampart.Outcome, err error) (counted bool, d time.Duration) {
	if o == rampart.Success && b.quiet(w) {
		return true, 0
	}
	return b.recordSlow(w, aux, o, err)
}

// latency is the duration of a Closed or ForcedClosed call of a timed
// policy admitted at mono time start, for the Observer: zero unless the
// policy measures latency and the breaker has an Observer.
func (b *Breaker) latency(start int64) time.Duration {
	if b.timing != timingLatency || b.set.observer == nil {
		return 0
	}
	return time.Duration(b.mono() - start)
}

// quiet reports whether a success on a permit issued under state word w
// can be counted without the lock: the permit is from the current Closed
// epoch and the tracker does not need the success (its wantsSuccess is
// false; with Consecutive: no failures pending). It writes nothing.
// Were the epoch to change right after the load, the success is ordered
// before that change, which it preceded. Only the built-in policies can
// decline a success here: a user's Tracker has no wantsSuccess and so
// wants every success (wanterOf).
func (b *Breaker) quiet(w uint64) bool {
	if w&fastMask != fastWord || b.word.Load() != w {
		return false
	}
	if run := b.run; run != nil { // Consecutive's wantsSuccess, inlined
		return run.Load() == 0
	}
	return !b.wanter.wantsSuccess() || b.counter != nil && b.counter.countSuccess()
}

// observeSuccess reports a quiet success, untimed, to the breaker's
// success Observer, which must be set. It is not inlined, so that the
// layer's Call keeps the event off its frame.
//
//go:noinline
func (b *Breaker) observeSuccess(ctx context.Context) {
	b.set.successes.Observe(ctx, b.set.success)
}

// recordSlow is record for everything but the fast path.
func (b *Breaker) recordSlow(w uint64, aux int64, o rampart.Outcome, err error) (bool, time.Duration) {
	switch stateOf(w) {
	case Closed:
		switch {
		case o == rampart.Ignored:
			return false, 0
		case o == rampart.Success && b.word.Load() == w && !b.wanter.wantsSuccess():
			return true, b.latency(aux) // quiet, but the policy measures latency
		}
		call := b.call(aux, o, err)
		counted := false
		if o == rampart.Failure && b.onFailure.Load() != nil {
			defer b.reportFailure(&counted, err) // after the unlock below
		}
		b.mu.Lock()
		defer b.unlock()
		if b.word.Load() != w {
			return false, call.Latency // stale: the breaker changed state since
		}
		if o == rampart.Failure {
			b.lastFailure = err
			counted = true
		}
		if b.tracker.Record(call) {
			// A rate policy may trip on a success (the call that brings
			// the window to MinCalls): the cause is then the policy's
			// reason, or the last failure.
			b.trip(Closed, b.tripCause(o))
		}
		return true, call.Latency
	case HalfOpen:
		b.mu.Lock()
		defer b.unlock()
		if b.word.Load() != w {
			return false, 0 // stale
		}
		start, ok := b.releaseProbe(aux, b.mono())
		if !ok || o == rampart.Ignored {
			return false, 0 // its lease expired, or no verdict
		}
		call := b.call(start, o, err)
		if o == rampart.Success {
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
			b.enter(Closed, nil, b.wall())
		case VerdictReopen:
			cause := b.tripCause(o)
			if cause == nil {
				cause = b.period.Load().cause
			}
			b.trip(HalfOpen, cause)
		}
		return true, call.Latency
	case ForcedClosed:
		if o != rampart.Ignored {
			return false, b.latency(aux) // nothing is recorded
		}
	}
	return false, 0
}

// tripCause returns the cause of a trip or re-open decided on an outcome
// o: the tracker's reason if o is a success and the tracker gives one,
// else the last failure of the period (nil if none). Called with mu held.
func (b *Breaker) tripCause(o rampart.Outcome) error {
	if o == rampart.Success {
		if cause := tripCauseOf(b.tracker); cause != nil {
			return cause
		}
	}
	return b.lastFailure
}

// call builds the Call for a tracker of a call admitted at mono time
// start, reading the clock only if asked to.
func (b *Breaker) call(start int64, o rampart.Outcome, err error) Call {
	c := Call{Outcome: o, Err: err}
	if b.timing == timingNone {
		return c
	}
	if clk := b.set.clock; clk != nil {
		c.Now, c.Monotonic = clk.Now(), clk.Monotonic()-b.origin
	} else {
		// One clock read: Now carries the monotonic reading.
		c.Now = time.Now()
		c.Monotonic = c.Now.Sub(b.base)
	}
	if b.timing == timingLatency {
		c.Latency = c.Monotonic - time.Duration(start)
	}
	return c
}

// releaseProbe removes the probe with ticket t and reports when it was
// admitted and whether it was still in flight at now: false if its lease
// has expired, whether or not an acquire has reclaimed its slot yet.
// Called with mu held.
func (b *Breaker) releaseProbe(t, now int64) (start int64, ok bool) {
	for i, p := range b.probes {
		if p.ticket == t {
			last := len(b.probes) - 1
			b.probes[i] = b.probes[last]
			b.probes = b.probes[:last]
			return p.start, p.expiry > now
		}
	}
	return 0, false
}
