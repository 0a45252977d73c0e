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
