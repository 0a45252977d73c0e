// Package clocktest provides a [clock.Clock] for tests whose wall reading
// can be stepped, to show that a layer measures durations on the monotonic
// reading alone.
package clocktest

import (
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart/clock"
)

// Jumpy is the system's clock (virtual inside a testing/synctest bubble)
// whose wall reading is offset by whatever [Jumpy.Jump] added, as an NTP
// step or an operator would. Monotonic and AfterFunc are the system's. It
// counts its readings and timers, so a test can check the layer used it.
type Jumpy struct {
	origin time.Time
	offset atomic.Int64
	// Nows, Monos and Timers count the calls to Now, Monotonic and
	// AfterFunc.
	Nows, Monos, Timers atomic.Int64
}

// New returns a Jumpy whose monotonic origin is now. Create it inside the
// bubble of the test that uses it.
func New() *Jumpy { return &Jumpy{origin: time.Now()} }

// Jump steps the wall reading by d (negative steps back).
func (j *Jumpy) Jump(d time.Duration) { j.offset.Add(int64(d)) }

// Now returns the system's wall time plus the jumps, stripped of its
// monotonic reading so that nothing can measure durations with it.
func (j *Jumpy) Now() time.Time {
	j.Nows.Add(1)
	return time.Now().Round(0).Add(time.Duration(j.offset.Load()))
}

// Monotonic returns the time since New, unaffected by jumps.
func (j *Jumpy) Monotonic() time.Duration {
	j.Monos.Add(1)
	return time.Since(j.origin)
}

// AfterFunc is [time.AfterFunc].
func (j *Jumpy) AfterFunc(d time.Duration, f func()) clock.Timer {
	j.Timers.Add(1)
	return time.AfterFunc(d, f)
}
