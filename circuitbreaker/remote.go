package circuitbreaker

import (
	"fmt"
	"time"
)

// ApplyRemote applies state shared by other replicas and reports whether
// it changed anything. Open with remaining > 0 opens for exactly remaining
// (then a probe), rejecting with cause; remaining <= 0 ends a remote Open.
// Closed closes only a remote Open (or its HalfOpen). A forced state is
// never changed. Any other to is an error and changes nothing. Safe for
// concurrent use.
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
