// Package observetest records the events layers report, for tests.
package observetest

import (
	"context"
	"sync"

	"github.com/rampart-go/rampart/observe"
)

// Recorder is an [observe.Observer] that keeps every event. Safe for concurrent
// use.
type Recorder struct {
	mu     sync.Mutex
	events []observe.Event
}

// Observe records e.
func (r *Recorder) Observe(_ context.Context, e observe.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Events returns the events recorded so far, in order.
func (r *Recorder) Events() []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observe.Event(nil), r.events...)
}

// Reset forgets the events recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}
