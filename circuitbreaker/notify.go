package circuitbreaker

import (
	"log"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
)

// Subscribe registers f for every transition, delivered in order, one at
// a time, without the breaker's lock (f may call the breaker), and
// returns a function that removes it. A nil f is ignored, and so is any
// f for a nil b (it never transitions); a panic in f goes to
// [Config.ListenerPanic]. Safe for concurrent use.
func (b *Breaker) Subscribe(f func(Transition)) (unsubscribe func()) {
	if b == nil || f == nil {
		return func() {}
	}
	return b.events.subscribe(func(tr Transition) {
		if !tr.moved { // the Observer's alone
			f(tr)
		}
	})
}

// unlock releases b.mu, then delivers the transitions queued while it was
// held (see dispatcher.flush). Every method that can cause a transition
// releases the lock this way.
func (b *Breaker) unlock() {
	b.mu.Unlock()
	b.events.flush()
}

// dispatcher delivers events to listeners in the order they were pushed,
// one at a time, with no lock held during a listener call. It is generic
// over the event so that other kinds of event can share it; a breaker has
// one, for its transitions. The zero dispatcher delivers synchronously and
// logs listener panics.
type dispatcher[E any] struct {
	// pending is true while queue may hold events, so that flush costs one
	// atomic load when nothing is queued. Written with mu held.
	pending atomic.Bool

	mu sync.Mutex
	// listeners is copied on write, so that a delivery in progress keeps
	// iterating the slice it loaded. Guarded by mu.
	listeners []listener[E]
	nextID    uint64 // guarded by mu
	queue     []E    // guarded by mu
	// delivering is true while a goroutine runs deliver; that goroutine
	// delivers everything queued until the queue is empty. Guarded by mu.
	delivering bool

	// Set before the dispatcher is shared, read-only afterwards.
	async   bool
	onPanic func(value any, stack []byte)
	name    string
}

type listener[E any] struct {
	id uint64
	f  func(E)
}

func (d *dispatcher[E]) subscribe(f func(E)) func() {
	if f == nil {
		return func() {}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextID++
	id := d.nextID
	d.listeners = append(slices.Clip(d.listeners), listener[E]{id: id, f: f})
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.listeners = slices.DeleteFunc(slices.Clone(d.listeners), func(l listener[E]) bool { return l.id == id })
	}
}

// push queues e if anyone is listening. The caller pushes events in the
// order they happened (the breaker pushes with its own lock held) and
// calls flush afterwards.
func (d *dispatcher[E]) push(e E) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.listeners) == 0 {
		return
	}
	d.queue = append(d.queue, e)
	d.pending.Store(true)
}

// flush delivers the queued events, unless a goroutine is delivering
// already (it will deliver them too): synchronously, on the calling
// goroutine, or, if d.async, on a goroutine started for them, which exits
// when the queue is empty.
func (d *dispatcher[E]) flush() {
	if !d.pending.Load() {
		return
	}
	d.mu.Lock()
	if d.delivering || len(d.queue) == 0 {
		d.mu.Unlock()
		return
	}
	d.delivering = true
	d.mu.Unlock()
	if d.async {
		go d.deliver()
	} else {
		d.deliver()
	}
}

// deliver delivers events until the queue is empty. It is called with
// d.delivering set, which it clears.
func (d *dispatcher[E]) deliver() {
	finished := false
	defer func() {
		if !finished {
			// A listener called runtime.Goexit (t.FailNow in a test):
			// the next flush delivers the rest.
			d.mu.Lock()
			d.delivering = false
			d.mu.Unlock()
		}
	}()
	d.mu.Lock()
	for len(d.queue) > 0 {
		e := d.queue[0]
		d.queue = d.queue[1:]
		ls := d.listeners
		d.mu.Unlock()
		for _, l := range ls {
			d.call(l.f, e)
		}
		d.mu.Lock()
	}
	d.queue = nil
	d.pending.Store(false)
	d.delivering = false
	finished = true
	d.mu.Unlock()
}

// call calls f, recovering a panic and reporting it with its stack.
func (d *dispatcher[E]) call(f func(E), e E) {
	defer func() {
		if v := recover(); v != nil {
			// Deferred calls run on top of the panicking frames, so the
			// stack still shows where the listener panicked.
			d.report(v, debug.Stack())
		}
	}()
	f(e)
}

// report hands a listener's panic to onPanic, or logs it. A panic in
// onPanic itself is logged.
func (d *dispatcher[E]) report(v any, stack []byte) {
	if d.onPanic != nil {
		defer func() {
			if v := recover(); v != nil {
				log.Printf("%sListenerPanic panicked: %v\n%s", prefix(d.name), v, debug.Stack())
			}
		}()
		d.onPanic(v, stack)
		return
	}
	log.Printf("%slistener panicked: %v\n%s", prefix(d.name), v, stack)
}
