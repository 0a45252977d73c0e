package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/retry"
)

// With a Clock the waits between attempts are timed on it, and a step of
// its wall reading changes nothing.
func TestRetry_CK3_WaitsRunOnTheSuppliedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
		var starts []time.Duration
		svc := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			starts = append(starts, clk.Monotonic()-time.Hour)
			if len(starts) < 3 {
				return "", errors.New("again")
			}
			return "ok", nil
		})
		s := wrapT(t, svc, retry.Config[string, string]{Backoff: constant(t, time.Second), Clock: clk, Budget: budget.Always})
		var resp string
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err = s.Call(context.Background(), "x")
		}()
		for range 2 {
			synctest.Wait()
			clk.Jump(-time.Hour) // a wall step moves no wait
			clk.Advance(time.Second - time.Nanosecond)
			synctest.Wait()
			require.Equal(t, 1, clk.Pending(), "still waiting a nanosecond before the backoff ends")
			clk.Advance(time.Nanosecond)
		}
		<-done
		require.NoError(t, err)
		assert.Equal(t, "ok", resp)
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, starts)
		assert.Equal(t, 2, clk.Stats().AfterFunc, "each wait is a timer of the clock")
		assert.Zero(t, clk.Stats().Now)
	})
}

// A wait on the supplied clock still ends when the caller's context does.
func TestRetry_CK3_ClockWaitEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
		svc := newScript(fail("a"))
		s := wrapT(t, svc, retry.Config[string, string]{Backoff: constant(t, time.Minute), Clock: clk})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		_, err := s.Call(ctx, "x")
		assert.Equal(t, time.Second, time.Since(start))
		assert.ErrorIs(t, err, context.Canceled)
		var ex *retry.ExhaustedError
		require.True(t, errors.As(err, &ex))
		assert.Equal(t, 1, ex.Attempts)
	})
}
