package timeout_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/timeout"
)

// With a Clock the deadline is the clock's monotonic reading plus the
// timeout, enforced by the clock's timer: the inner context has no
// Deadline, is cancelled with the layer's cause, and the caller gets the
// same *Error as without a Clock, whatever the wall reading does.
func TestLayer_CK4_DeadlineOnTheSuppliedClock(t *testing.T) {
	inBothModes(t, func(t *testing.T, abandon bool) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
		var hasDeadline bool
		var cause error
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
			_, hasDeadline = ctx.Deadline()
			clk.Jump(-time.Hour) // a wall step back during the call
			<-ctx.Done()
			cause = context.Cause(ctx)
			return "", ctx.Err()
		})
		svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: abandon, Clock: clk}, inner)

		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err = svc.Call(context.Background(), "req")
		}()
		synctest.Wait()
		clk.Advance(100*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("returned before the deadline on the clock")
		default:
		}
		clk.Advance(time.Nanosecond)
		<-done
		synctest.Wait() // an abandoned inner call ends too

		assert.False(t, hasDeadline)
		assert.ErrorIs(t, cause, timeout.ErrTimeout)
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var te *timeout.Error
		require.ErrorAs(t, err, &te)
		assert.Equal(t, 100*time.Millisecond, te.After)
		if te.Err != nil { // Abandon mode may see the inner call return as the deadline fires
			assert.EqualError(t, err, "timeout: deadline of 100ms exceeded: context deadline exceeded")
		} else {
			assert.True(t, abandon)
		}
		assert.Zero(t, clk.Stats().Now)
		assert.Equal(t, 1, clk.Stats().AfterFunc)
	})
}

// With a Clock, an error before the deadline is the inner error, and the
// caller's own (system-time) deadline is still the caller's answer.
func TestLayer_CK4_ClockWhoseDeadline(t *testing.T) {
	inBothModes(t, func(t *testing.T, abandon bool) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
		svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: abandon, Clock: clk}, after(50*time.Millisecond, "", errBoom))
		_, took, err := timed(context.Background(), svc)
		assert.Equal(t, 50*time.Millisecond, took)
		assert.Same(t, errBoom, err)

		svc = wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: abandon, Clock: clk}, honest)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, took, err = timed(ctx, svc)
		assert.Equal(t, 50*time.Millisecond, took)
		assert.Equal(t, context.DeadlineExceeded, err, "the caller's own error, unwrapped")
	})
}
