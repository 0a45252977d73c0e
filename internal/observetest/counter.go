package observetest

import (
	"context"
	"sync"

	"github.com/rampart-go/rampart/observe"
)

// Counter is an [observe.Observer] that counts events by Kind. Safe for
// concurrent use.
type Counter struct {
	mu     sync.Mutex
	counts map[observe.Kind]int
}

// Observe counts e.
func (c *Counter) Observe(_ context.Context, e observe.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = make(map[observe.Kind]int)
	}
	c.counts[e.Kind]++
}

// Outcomes returns the counts of a breaker's call events (success,
// failure, ignored, refused), by the kind's name, zeros included.
func (c *Counter) Outcomes() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, 4)
	for _, k := range []observe.Kind{observe.Success, observe.Failure, observe.Ignored, observe.Rejected} {
		m[k.String()] = c.counts[k]
	}
	return m
}
