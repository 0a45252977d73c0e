// Package tuned keeps the Observers of the layers that share one setting
// changed at run time (a retry Tuner, a concurrency Limiter, a rate
// limiter) and tells each of them of a change.
package tuned

import (
	"context"
	"sync"

	"github.com/rampart-go/rampart/observe"
)

// Watchers are the named Observers of the layers built with one setting
// changed at run time. The zero Watchers has none. Safe for concurrent
// use.
type Watchers struct {
	mu sync.Mutex
	ws []watcher
}

// watcher is the name and Observer of a layer.
type watcher struct {
	name string
	obs  observe.Observer
}

// Add adds obs, the Observer of a layer named name. w keeps it for its
// lifetime: share the setting among layers that live as long as it.
func (w *Watchers) Add(name string, obs observe.Observer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// A full slice expression, so that append never writes to the array
	// a Tell in flight reads.
	w.ws = append(w.ws[:len(w.ws):len(w.ws)], watcher{name: name, obs: obs})
}

// Tell reports e, with Kind set to [observe.Tuned], to each Observer
// added, with Name set to its layer's name, in the order they were added,
// on the caller's goroutine and without w's lock held.
func (w *Watchers) Tell(e observe.Event) {
	w.mu.Lock()
	ws := w.ws
	w.mu.Unlock()
	e.Kind = observe.Tuned
	for _, x := range ws {
		e.Name = x.name
		x.obs.Observe(context.Background(), e)
	}
}
