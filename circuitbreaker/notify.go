package circuitbreaker

import "slices"

type listener struct {
	id uint64
	f  func(Transition)
}

// Subscribe registers f to be told about every transition of the breaker
// and returns a function that removes it; calling that function more
// than once is harmless.
//
// Transitions are delivered in the order they happened, one at a time:
// listeners are never called concurrently with each other or with
// themselves. They are called without the breaker's lock held, on the
// goroutine that caused a transition or on one already delivering earlier
// transitions, so a listener may call the breaker (read its State, Reset
// it, acquire permits); a transition it causes is delivered after it
// returns. A listener that panics is recovered: the breaker and the other
// listeners carry on and the panic value is discarded. A listener that
// blocks delays the delivery of later transitions but not the breaker
// itself. A transition already being delivered when unsubscribe is called
// may still reach f once.
//
// Subscribe is safe for concurrent use; f is not called for transitions
// that happened before Subscribe. A nil f is ignored.
func (b *Breaker) Subscribe(f func(Transition)) (unsubscribe func()) {
	if f == nil {
		return func() {}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextID++
	id := b.nextID
	// Copy on write: a delivery in progress keeps iterating the old slice.
	b.listeners = append(slices.Clip(b.listeners), listener{id: id, f: f})
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.listeners = slices.DeleteFunc(slices.Clone(b.listeners), func(l listener) bool { return l.id == id })
	}
}

// unlock releases b.mu after delivering the queued transitions, unless
// another goroutine is delivering already, in which case that goroutine
// will deliver them. The lock is released around every listener call.
// Every method that can cause a transition releases the lock this way, so
// a transition is delivered before the goroutine that caused it returns to
// its caller, unless someone else is delivering.
func (b *Breaker) unlock() {
	if b.delivering || len(b.queue) == 0 {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	finished := false
	defer func() {
		if !finished {
			// A listener called runtime.Goexit (t.FailNow in a test):
			// let the next transition's goroutine deliver the rest.
			b.mu.Lock()
			b.delivering = false
			b.mu.Unlock()
		}
	}()
	for len(b.queue) > 0 {
		t := b.queue[0]
		b.queue = b.queue[1:]
		ls := b.listeners
		b.mu.Unlock()
		for _, l := range ls {
			notify(l.f, t)
		}
		b.mu.Lock()
	}
	b.queue = nil
	b.delivering = false
	finished = true
	b.mu.Unlock()
}

// notify calls f, recovering a panic so that it breaks nothing.
func notify(f func(Transition), t Transition) {
	defer func() { _ = recover() }()
	f(t)
}
