package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/ratelimit"
)

var okService = rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })

// With a Clock, tokens come due on its monotonic reading and the waiting
// call waits on its timer: a step of its wall reading moves nothing.
func TestLayer_CK5_WaitOnTheSuppliedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFake()
		l, err := ratelimit.NewLayer[string, string](ratelimit.Config{Limiter: rate.NewLimiter(1, 1), Clock: clk})
		require.NoError(t, err)
		svc := l.Wrap(okService)
		_, err = svc.Call(context.Background(), "")
		require.NoError(t, err)
		for i, jump := range []time.Duration{-time.Hour, 2 * time.Hour} {
			done := make(chan error, 1)
			go func() {
				_, err := svc.Call(context.Background(), "")
				done <- err
			}()
			synctest.Wait()
			clk.Jump(jump) // a wall step moves no token
			clk.Advance(time.Second - time.Nanosecond)
			synctest.Wait()
			require.Len(t, done, 0, "call %d waits a nanosecond more", i+2)
			clk.Advance(time.Nanosecond)
			require.NoError(t, <-done)
		}
		assert.Equal(t, 2, clk.Stats().AfterFunc)
		assert.Zero(t, clk.Stats().Now)
	})
}

// In Refuse mode with a Clock the refusal's RetryAfter is exact on it, and
// a keyed limiter runs on it too.
func TestKeyed_CK5_RejectOnTheSuppliedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFake()
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 2, Clock: clk})
		require.NoError(t, err)
		l, err := ratelimit.NewKeyedLayer[string, string](k, func(s string) string { return s }, ratelimit.Refuse)
		require.NoError(t, err)
		svc := l.Wrap(okService)
		_, err = svc.Call(context.Background(), "a")
		require.NoError(t, err)
		clk.Jump(time.Hour) // the wall clock moves; no token comes of it
		_, err = svc.Call(context.Background(), "a")
		var le *ratelimit.LimitedError
		require.True(t, errors.As(err, &le))
		assert.Equal(t, 500*time.Millisecond, le.Wait)
		clk.Advance(500 * time.Millisecond)
		_, err = svc.Call(context.Background(), "a")
		require.NoError(t, err)
		assert.Zero(t, clk.Stats().Now)
	})
}

// A caller's context ending while it waits on the clock ends the wait and
// gives the token back.
func TestLayer_CK5_ClockWaitEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFake()
		lim := rate.NewLimiter(1, 1)
		l, err := ratelimit.NewLayer[string, string](ratelimit.Config{Limiter: lim, Clock: clk})
		require.NoError(t, err)
		svc := l.Wrap(okService)
		_, err = svc.Call(context.Background(), "")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := svc.Call(ctx, "")
			done <- err
		}()
		synctest.Wait()
		clk.Advance(300 * time.Millisecond)
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
		go func() {
			_, err := svc.Call(context.Background(), "")
			done <- err
		}()
		synctest.Wait()
		clk.Advance(700*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		require.Len(t, done, 0, "the token given back is due 1s after the first")
		clk.Advance(time.Nanosecond)
		require.NoError(t, <-done)
	})
}
