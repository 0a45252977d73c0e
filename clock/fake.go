package clock

import (
	"slices"
	"sync"
	"time"
)

// Fake is a [Clock] for tests that moves only when told: [Fake.Advance]
// moves its wall and monotonic readings together and runs the timers that
// come due, and [Fake.Jump] moves the wall reading alone, as an NTP step
// or an operator would, to show that durations are measured on the
// monotonic reading. Use it to test a stack of rampart layers (or your own
// code) on virtual time outside a [testing/synctest] bubble, or inside
// one to step the wall clock; the idea of a hand-driven clock is that of
// Java's and Go's many test clocks (jonboulle/clockwork,
// benbjohnson/clock), with an exact order.
//
// Timers fire in order of their due time, and timers due at the same
// instant in the order they were armed (by [Fake.AfterFunc] or
// [FakeTimer.Reset]), so a test is deterministic. Unlike [time.AfterFunc],
// a timer's function runs on the goroutine that called Advance, with the
// clock reading its due time, and never before AfterFunc returns (a
// timer due at once runs on the next Advance, even Advance(0)); so when
// Advance returns, every function due has returned. A function may arm,
// stop or reset timers, and read the clock; it must not call Advance.
//
// A layer that waits on the clock (retry's backoff, a rate limiter's
// queue) blocks its caller until a test calls Advance from another
// goroutine; inside a synctest bubble, synctest.Wait tells the test when
// the caller is blocked.
//
// The zero Fake is NewFake(time.Time{}, 0): its readings start at the
// zero time and a monotonic 0. A nil *Fake is a clock that never moves:
// Now is the zero time, Monotonic 0, Advance and Jump do nothing, and
// AfterFunc returns a timer that never fires; Pending and Stats are zero.
// The rampart Configs that take a Clock refuse one that is a nil pointer
// (a nil *Fake too) at construction.
// A Fake is safe for concurrent use.
type Fake struct {
	adv    sync.Mutex // held through an Advance: Advances run one at a time
	mu     sync.Mutex
	wall   time.Time
	mono   time.Duration
	seq    uint64       // timers armed so far, for the order of ties
	timers []*FakeTimer // pending, in no order
	stats  FakeStats
}

// FakeStats counts the calls made to a [Fake], so a test can check that
// a layer used its clock, or did not.
type FakeStats struct {
	// Now, Monotonic and AfterFunc count the calls to each method.
	Now, Monotonic, AfterFunc int
}

// FakeTimer is a timer armed by [Fake.AfterFunc]. It satisfies [Timer].
// A nil or zero *FakeTimer, and one from a nil *Fake, belongs to no clock
// and never fires: Stop and Reset report false and do nothing.
type FakeTimer struct {
	c   *Fake
	at  time.Duration // due, on the monotonic reading
	seq uint64
	f   func()
	on  bool // pending; guarded by c.mu
}

// NewFake returns a Fake whose wall reading is wall and whose monotonic
// reading is mono (a time since an origin of the test's choosing; a value
// far from zero shows code that wrongly takes zero for an origin).
func NewFake(wall time.Time, mono time.Duration) *Fake {
	return &Fake{wall: wall, mono: mono}
}

// Now returns the wall reading, without a monotonic reading of its own.
func (c *Fake) Now() time.Time {
	if c == nil {
		return time.Time{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Now++
	return c.wall
}

// Monotonic returns the monotonic reading.
func (c *Fake) Monotonic() time.Duration {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Monotonic++
	return c.mono
}

// AfterFunc arms a timer that calls f when an Advance reaches d from now
// (d <= 0: on the next Advance), and returns it; a [*FakeTimer].
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	if c == nil {
		return &FakeTimer{f: f}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.AfterFunc++
	t := &FakeTimer{c: c, f: f}
	c.arm(t, d)
	return t
}

// arm makes t due d from now; c.mu is held.
func (c *Fake) arm(t *FakeTimer, d time.Duration) {
	c.seq++
	t.at, t.seq = c.mono+max(d, 0), c.seq
	if !t.on {
		t.on = true
		c.timers = append(c.timers, t)
	}
}

// Stop prevents t's call if it has not started, and reports whether it
// did so, as [time.Timer.Stop] does.
func (t *FakeTimer) Stop() bool {
	if t == nil || t.c == nil {
		return false
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.disarm(t)
}

// disarm removes t from the pending timers; c.mu is held.
func (c *Fake) disarm(t *FakeTimer) bool {
	if !t.on {
		return false
	}
	t.on = false
	c.timers = slices.DeleteFunc(c.timers, func(u *FakeTimer) bool { return u == t })
	return true
}

// Reset makes t due d from now (d <= 0: on the next Advance), whether it
// was pending, stopped or had fired, and reports whether it was pending,
// as [time.Timer.Reset] does. A reset timer is ordered among timers due
// at the same instant as one armed at the reset.
func (t *FakeTimer) Reset(d time.Duration) bool {
	if t == nil || t.c == nil {
		return false
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.c.arm(t, d)
	return was
}

// Advance moves both readings on by d (negative is taken as zero),
// running each timer that comes due on the way, at its due time, in the
// order the type documents, on the calling goroutine.
//
// Advances run one at a time: one called while another runs its timers
// waits for it, then moves the clock on by its own d.
func (c *Fake) Advance(d time.Duration) {
	if c == nil {
		return
	}
	c.adv.Lock()
	defer c.adv.Unlock()
	c.mu.Lock()
	end := c.mono + max(d, 0)
	for {
		var next *FakeTimer
		for _, t := range c.timers {
			if t.at <= end && (next == nil || t.at < next.at || t.at == next.at && t.seq < next.seq) {
				next = t
			}
		}
		if next == nil {
			break
		}
		c.disarm(next)
		if next.at > c.mono {
			c.wall = c.wall.Add(next.at - c.mono)
			c.mono = next.at
		}
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
	c.wall = c.wall.Add(end - c.mono)
	c.mono = end
	c.mu.Unlock()
}

// Jump moves the wall reading by d, which may be negative, and not the
// monotonic one.
func (c *Fake) Jump(d time.Duration) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

// Pending returns how many timers are armed and have not fired.
func (c *Fake) Pending() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Stats returns how many calls each method of the Clock interface has
// had.
func (c *Fake) Stats() FakeStats {
	if c == nil {
		return FakeStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}
