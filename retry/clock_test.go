package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/internal/clocktest"
	"github.com/rampart-go/rampart/retry"
)

// With a Clock the waits between attempts are timed on it, and a step of
// its wall reading changes nothing.
func TestRetry_CK3_WaitsRunOnTheSuppliedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktest.New()
		clk.Jump(-time.Hour)
		svc := newScript(fail("a"), fail("b"), outcome{resp: "ok"})
		s := wrapT(t, svc, retry.Config[string, string]{Backoff: constant(t, time.Second), Clock: clk, Budget: budget.Always})
		resp, err := s.Call(context.Background(), "x")
		require.NoError(t, err)
		assert.Equal(t, "ok", resp)
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, svc.starts)
		assert.Equal(t, int64(2), clk.Timers.Load(), "each wait is a timer of the clock")
		assert.Zero(t, clk.Nows.Load())
	})
}

// A wait on the supplied clock still ends when the caller's context does.
func TestRetry_CK3_ClockWaitEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktest.New()
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
