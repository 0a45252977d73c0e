package clock

import (
	"context"
	"time"
)

// Sleeper is implemented by a [Clock] that must see every wait made on it.
// A discrete-event simulator advances its time only when every goroutine
// it runs is waiting on it, and cannot tell a goroutine blocked in a
// select on a timer's channel from one still running; a wait made through
// Sleep tells it. Layers that wait for a duration on a supplied Clock call
// [Sleep], which uses this method when the Clock has it.
type Sleeper interface {
	// Sleep blocks until d of the clock's monotonic time has passed or ctx
	// is done, whichever comes first, and returns nil or ctx's error.
	Sleep(ctx context.Context, d time.Duration) error
}

// Sleep waits on c until d has passed or ctx is done, and returns nil or
// ctx.Err(). It returns at once for d <= 0 (nil, unless ctx is done). It
// uses c's Sleep method when c is a [Sleeper], and otherwise a timer from
// c.AfterFunc (one allocation for the timer, one for its channel), which
// it stops before returning.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if s, ok := c.(Sleeper); ok {
		return s.Sleep(ctx, d)
	}
	done := make(chan struct{})
	t := c.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}
