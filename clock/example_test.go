package clock_test

import (
	"fmt"
	"time"

	"github.com/rampart-go/rampart/clock"
)

// offsetClock is the system clock shifted by a fixed offset: its wall
// reading differs from the system's, its durations do not.
type offsetClock struct{ offset time.Duration }

func (c offsetClock) Now() time.Time           { return time.Now().Add(c.offset) }
func (c offsetClock) Monotonic() time.Duration { return clock.System.Monotonic() }
func (c offsetClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return clock.System.AfterFunc(d, f)
}

// A Clock of your own: any type with the three methods.
func ExampleClock() {
	var c clock.Clock = offsetClock{offset: -24 * time.Hour}
	done := make(chan struct{})
	start := c.Monotonic()
	c.AfterFunc(10*time.Millisecond, func() { close(done) })
	<-done
	fmt.Println(c.Monotonic()-start >= 10*time.Millisecond)
	fmt.Println(time.Since(c.Now()).Round(time.Hour))
	// Output:
	// true
	// 24h0m0s
}

// A test drives a Fake by hand: timers fire as Advance reaches them, in
// order, and a step of the wall clock moves no timer.
func ExampleFake() {
	c := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), 0)
	c.AfterFunc(2*time.Second, func() { fmt.Println("second timer at", c.Monotonic()) })
	c.AfterFunc(time.Second, func() { fmt.Println("first timer at", c.Monotonic()) })
	c.Jump(-time.Hour) // NTP steps the wall clock back
	c.Advance(3 * time.Second)
	fmt.Println("wall", c.Now().Format(time.TimeOnly), "monotonic", c.Monotonic())
	// Output:
	// first timer at 1s
	// second timer at 2s
	// wall 14:00:03 monotonic 3s
}
