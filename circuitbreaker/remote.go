package circuitbreaker

import (
	"fmt"
	"time"
)

// ApplyRemote applies state shared by other processes, such as the other
// replicas of a service, to the breaker, and reports whether it changed
// anything. It is the inbound half of sharing a breaker's state; the
// outbound half is [Breaker.Subscribe], whose transitions with Remote
// false are the ones this breaker made itself. Admission stays local:
// nothing on a call's path waits for the other processes.
//
// to must be Open or Closed:
//
//   - Open with remaining > 0 opens the breaker for exactly remaining
//     ([Forever] for no end), like a forced open that ends by itself:
//     calls are rejected with an [*OpenError] whose Cause is cause, and
//     once remaining has passed the next acquire enters HalfOpen and is a
//     probe, as after a cool-down. It replaces a Closed or HalfOpen state
//     (permits issued in it no longer count) and the end of an Open one,
//     which then counts as remote. Remaining is a duration, not an
//     instant, so the clocks of the processes need not agree.
//   - Open with remaining <= 0 ends a remote Open now (the next acquire
//     is a probe); it does nothing to any other state.
//   - Closed closes the breaker with a clean history only if its Open (or
//     the HalfOpen that followed it) came from ApplyRemote: a breaker
//     tripped by its own calls stays Open until its own probes close it.
//
// A [Switch]'s forced state is never changed. A transition this causes
// reaches the listeners with Remote true and RetryAfter set for an Open;
// an Open that only moves its end is no transition. The cool-down
// schedule is unchanged: a probe that fails after a remote Open re-opens
// for the breaker's own next cool-down.
//
// ApplyRemote returns an error, and changes nothing, when to is neither
// Open nor Closed. Safe for concurrent use.
func (b *Breaker) ApplyRemote(to State, remaining time.Duration, cause error) (changed bool, err error) {
	if to != Open && to != Closed {
		return false, fmt.Errorf("circuitbreaker: ApplyRemote: state must be Open or Closed, got %v", to)
	}
	b.mu.Lock()
	defer b.unlock()
	b.setUp()
	now := b.mono()
	per := b.period.Load()
	from := stateOf(b.word.Load())
	remote := per.remote && (from == Open || from == HalfOpen)
	switch {
	case from == ForcedOpen || from == ForcedClosed:
		return false, nil
	case to == Closed:
		if !remote {
			return false, nil
		}
		b.enterWith(Closed, nil, b.wall(), true, 0)
	case remaining > 0:
		b.enterWith(Open, cause, b.wall(), true, remaining)
	case remote && from == Open && per.until > now:
		// End the remote Open now: the next acquire enters HalfOpen.
		b.enterWith(Open, per.cause, b.wall(), true, 0)
	default:
		return false, nil
	}
	return true, nil
}
