package tuned_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/internal/tuned"
	"github.com/rampart-go/rampart/observe"
)

// recorder keeps the events it observes.
type recorder struct {
	mu     sync.Mutex
	events []observe.Event
}

func (r *recorder) Observe(_ context.Context, e observe.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func TestWatchers_TellsEachLayerByName(t *testing.T) {
	var w tuned.Watchers
	w.Tell(observe.Event{Source: observe.Retry}) // none yet: nothing to tell
	a, b := &recorder{}, &recorder{}
	w.Add("a", a)
	w.Add("b", b)
	w.Add("a2", a)
	w.Tell(observe.Event{Source: observe.Retry, Attempt: 4})
	assert.Equal(t, []observe.Event{
		{Source: observe.Retry, Name: "a", Kind: observe.Tuned, Attempt: 4},
		{Source: observe.Retry, Name: "a2", Kind: observe.Tuned, Attempt: 4},
	}, a.events)
	assert.Equal(t, []observe.Event{{Source: observe.Retry, Name: "b", Kind: observe.Tuned, Attempt: 4}}, b.events)
}

// Adds racing with Tells (run with -race) lose no watcher: a Tell after
// them reaches every one.
func TestWatchers_AddWhileTelling(t *testing.T) {
	var w tuned.Watchers
	busy := &recorder{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				w.Add("x", busy)
				w.Tell(observe.Event{Source: observe.Concurrency})
			}
		})
	}
	wg.Wait()
	busy.mu.Lock()
	busy.events = nil
	busy.mu.Unlock()
	w.Tell(observe.Event{Source: observe.Concurrency})
	want := make([]observe.Event, 200)
	for i := range want {
		want[i] = observe.Event{Source: observe.Concurrency, Name: "x", Kind: observe.Tuned}
	}
	assert.Equal(t, want, busy.events)
}
