package circuitbreaker_test

import (
	"slices"
	"sync"
	"time"

	"github.com/rampart-go/rampart/clock"
)

// fakeClock is a clock.Clock driven by hand: Advance moves both readings
// and runs the timers that come due, in order, on the calling goroutine;
// Jump moves only the wall reading, as an NTP step or an operator would.
// It counts its readings and its live timers. Safe for concurrent use.
type fakeClock struct {
	mu     sync.Mutex
	wall   time.Time
	mono   time.Duration
	reads  int
	timers []*fakeTimer
}

type fakeTimer struct {
	c  *fakeClock
	at time.Duration
	f  func()
}

func newFakeClock() *fakeClock {
	// Far from the zero Monotonic, so that an origin of zero would show.
	return &fakeClock{wall: time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC), mono: 1000 * time.Hour}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.wall
}

func (c *fakeClock) Monotonic() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.mono
}

// AfterFunc never calls f before it returns (the breaker arms timers with
// its lock held): a timer that is due at once fires on the next Advance.
func (c *fakeClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.mono + max(d, 0), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	n := len(t.c.timers)
	t.c.timers = slices.DeleteFunc(t.c.timers, func(u *fakeTimer) bool { return u == t })
	return len(t.c.timers) < n
}

// Advance moves both readings on by d, running each timer that comes due
// at its time, earliest first.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.mono + d
	for {
		i := -1
		for j, t := range c.timers {
			if t.at <= end && (i < 0 || t.at < c.timers[i].at) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		t := c.timers[i]
		c.timers = slices.Delete(c.timers, i, i+1)
		c.wall = c.wall.Add(max(t.at-c.mono, 0))
		c.mono = max(c.mono, t.at)
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.wall = c.wall.Add(end - c.mono)
	c.mono = end
	c.mu.Unlock()
}

// Jump moves the wall reading by d, which may be negative, and not the
// monotonic one.
func (c *fakeClock) Jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

// Reads returns how many readings (Now or Monotonic) were taken.
func (c *fakeClock) Reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// Timers returns how many timers are pending.
func (c *fakeClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
