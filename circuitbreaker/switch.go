package circuitbreaker

import (
	"slices"
	"sync"
	"weak"
)

// Switch forces the breakers attached through [Config.Switch] open or
// closed by hand (resilience4j's FORCED_OPEN and DISABLED). Every change
// is a transition. The zero Switch is released; a Switch is safe for
// concurrent use, also from a listener. A nil *Switch has no breaker
// attached (a Config whose Switch is nil has no switch): ForceOpen,
// ForceClosed and Release change nothing, and Forced reports Closed,
// false and a nil reason.
type Switch struct {
	mu       sync.Mutex
	state    State // Closed (released), ForcedOpen or ForcedClosed; guarded by mu
	reason   error // guarded by mu
	breakers []weak.Pointer[Breaker]
}

// ForceOpen forces every attached breaker open, refusing calls with an
// [*OpenError] whose Cause is reason (which may be nil).
func (s *Switch) ForceOpen(reason error) { s.set(ForcedOpen, reason) }

// ForceClosed forces every attached breaker closed, recording nothing.
func (s *Switch) ForceClosed() { s.set(ForcedClosed, nil) }

// Release returns every attached breaker to Closed with a clean history,
// if the switch was forcing.
func (s *Switch) Release() { s.set(Closed, nil) }

// Forced returns the forced state and true, or Closed and false, with the
// reason given to ForceOpen.
func (s *Switch) Forced() (state State, forced bool, reason error) {
	if s == nil {
		return Closed, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.state != Closed, s.reason
}

// set changes the switch and applies the change to every live breaker.
// Changes are applied with s.mu held, so every breaker sees them in the same
// order; the transitions are delivered after s.mu is released, so a
// listener may use the switch.
func (s *Switch) set(to State, reason error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.state == to && to != ForcedOpen {
		s.mu.Unlock()
		return
	}
	s.state, s.reason = to, reason
	var live []*Breaker
	s.breakers = slices.DeleteFunc(s.breakers, func(p weak.Pointer[Breaker]) bool {
		b := p.Value()
		if b != nil {
			live = append(live, b)
		}
		return b == nil
	})
	for _, b := range live {
		b.mu.Lock()
		b.force(to, reason)
		b.mu.Unlock()
	}
	s.mu.Unlock()
	for _, b := range live {
		b.events.flush()
	}
}

// attach adds b, a breaker under construction, and puts it in the switch's
// current state without a transition (nobody can be listening yet).
func (s *Switch) attach(b *Breaker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.breakers); n >= 64 && n&(n-1) == 0 {
		// Drop breakers collected since: at each power of two, so a switch
		// that is never flipped does not keep one pointer per breaker ever
		// attached, at an amortised constant cost per attach.
		s.breakers = slices.DeleteFunc(s.breakers, func(p weak.Pointer[Breaker]) bool { return p.Value() == nil })
	}
	s.breakers = append(s.breakers, weak.Make(b))
	if s.state != Closed {
		b.mu.Lock()
		b.force(s.state, s.reason) // nobody listens yet: nothing is queued
		b.mu.Unlock()
	}
}

// force applies a switch change to b. Called with b.mu held.
func (b *Breaker) force(to State, reason error) {
	if to == Closed {
		if s := stateOf(b.word.Load()); s != ForcedOpen && s != ForcedClosed {
			return
		}
	}
	b.enter(to, reason, b.wall())
}
