// Package clock lets rampart's layers run on time that you supply, so that
// hours of recorded traffic can be replayed through them in seconds, while
// an unset clock costs nothing.
//
// # Quick start
//
//	br, err := circuitbreaker.New(circuitbreaker.Config{Clock: myClock})
//
// Every rampart Config that measures time has a Clock field. Left nil, the
// layer reads the system's clock directly, with no interface call and no
// allocation; set, every reading and every timer of that layer goes through
// it. Tests do not need a Clock: run them inside [testing/synctest.Test],
// whose bubble gives the system clock virtual, exact time. To step the
// wall clock apart from the monotonic one, or to drive time by hand
// outside a bubble, give the layers a [Fake].
//
// # Monotonic time
//
// A Clock has two readings. [Clock.Now] is the wall time, used only for
// timestamps that people read (a transition's time, a trace record's
// start). [Clock.Monotonic] never steps back, and every duration rampart
// measures (a cool-down, a window, a latency, a deadline) is a difference
// of two Monotonic readings, so a step of the wall clock (NTP, a leap, an
// operator) cannot shorten or stretch one.
package clock

import "time"

// Clock is a source of time and timers. Implementations must be safe for
// concurrent use.
type Clock interface {
	// Now returns the wall time, for timestamps that people read.
	Now() time.Time
	// Monotonic returns the time elapsed since an origin fixed by the
	// Clock. It never decreases. Durations are measured as differences
	// of Monotonic readings, never of Now.
	Monotonic() time.Duration
	// AfterFunc calls f in its own goroutine once d of monotonic time has
	// passed (at once for d <= 0), as [time.AfterFunc] does, and returns a
	// Timer that can stop it.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call made by [Clock.AfterFunc]. A [*time.Timer]
// satisfies it.
type Timer interface {
	// Stop prevents the call if it has not started, and reports whether it
	// did so, as [time.Timer.Stop] does.
	Stop() bool
}

// System is the system's clock: [time.Now], a monotonic reading taken from
// time.Now's monotonic clock, and [time.AfterFunc]. Layers whose Clock is
// nil use the system's clock directly, without going through System.
var System Clock = system{}

type system struct{}

// epoch is what MonotonicTime counts a supplied clock's readings from.
var epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// MonotonicTime returns the time to hand to code that takes a [time.Time]
// and measures durations between such times, such as the methods of
// golang.org/x/time/rate's Limiter whose names end in At: for a nil c,
// [time.Now]; otherwise a fixed origin (2000-01-01 00:00 UTC) plus
// c.Monotonic(). Two readings of one Clock are as far apart as its
// Monotonic readings, so a step of its wall reading moves nothing, and
// two users of one Clock that both call MonotonicTime (the ratelimit
// layer and a limiter's owner that sets its rate) count on one time. The
// result is not a wall time: it is not for people to read. Safe for
// concurrent use, as a Clock is.
func MonotonicTime(c Clock) time.Time {
	if c == nil {
		return time.Now()
	}
	return epoch.Add(c.Monotonic())
}

// origin is the system clock's Monotonic origin.
var origin = time.Now()

func (system) Now() time.Time                            { return time.Now() }
func (system) Monotonic() time.Duration                  { return time.Since(origin) }
func (system) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
