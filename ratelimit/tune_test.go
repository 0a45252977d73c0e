package ratelimit_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ratelimit"
)

// Tune changes the rate while calls flow, keeping the tokens earned, and
// each layer with an Observer sees it.
func TestTune_LM13_RateAndBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := rate.NewLimiter(1, 1)
		var rec observetest.Recorder
		l, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: lim, Mode: ratelimit.Refuse, Name: "api", Observer: &rec})
		require.NoError(t, err)
		svc := l.Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, nil }))
		call := func() error { _, err := svc.Call(context.Background(), 0); return err }
		require.NoError(t, call())
		require.ErrorIs(t, call(), ratelimit.ErrLimited, "the burst of 1 is spent")
		time.Sleep(500 * time.Millisecond) // half a token earned at 1/s
		require.NoError(t, ratelimit.Tune(lim, ratelimit.Tuning{Limit: 10, Burst: 2}))
		time.Sleep(49 * time.Millisecond) // x/time/rate rounds a wait below 1ns to none: stay clear of it
		require.ErrorIs(t, call(), ratelimit.ErrLimited, "0.5 + 10/s × 49ms is not yet a token")
		time.Sleep(time.Millisecond)
		require.NoError(t, call())
		time.Sleep(time.Second)
		require.NoError(t, call())
		require.NoError(t, call())
		require.ErrorIs(t, call(), ratelimit.ErrLimited, "the new burst of 2")
		var tuned []observe.Event
		for _, e := range rec.Events() {
			if e.Kind == observe.Tuned {
				tuned = append(tuned, e)
			}
		}
		assert.Equal(t, []observe.Event{{Source: observe.RateLimit, Name: "api", Kind: observe.Tuned}}, tuned)
	})
}

// On a layer's Clock, Tune sets the rate at the clock's time.
func TestTune_LM13_OnTheLayersClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Hour)
		lim := rate.NewLimiter(0, 1)
		l, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: lim, Mode: ratelimit.Refuse, Clock: clk})
		require.NoError(t, err)
		svc := l.Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, nil }))
		call := func() error { _, err := svc.Call(context.Background(), 0); return err }
		require.NoError(t, call())
		require.ErrorIs(t, call(), ratelimit.ErrLimited)
		require.NoError(t, ratelimit.Tune(lim, ratelimit.Tuning{Limit: 1, Burst: 1}))
		clk.Advance(999 * time.Millisecond)
		require.ErrorIs(t, call(), ratelimit.ErrLimited)
		clk.Advance(time.Millisecond)
		require.NoError(t, call(), "one token a second from the change, on the fake clock")
	})
}

// The layers built with one limiter share its clock: a layer with
// another Clock (nil, the system's, included) is refused, so that Tune's
// time is every layer's.
func TestTune_LM13_OneClockPerLimiter(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Hour)
	other := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Hour)
	build := func(lim *rate.Limiter, c clock.Clock) error {
		_, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: lim, Clock: c})
		return err
	}
	lim := rate.NewLimiter(1, 1)
	require.NoError(t, build(lim, clk))
	require.NoError(t, build(lim, clk), "the same Clock")
	assert.EqualError(t, build(lim, nil), "ratelimit: Config.Clock is nil (the system's clock), but the layers built with this Limiter run on a *clock.Fake: a rate.Limiter counts its tokens on one clock")
	assert.EqualError(t, build(lim, other), "ratelimit: Config.Clock is another *clock.Fake than the one the layers built with this Limiter run on: a rate.Limiter counts its tokens on one clock")

	system := rate.NewLimiter(1, 1)
	require.NoError(t, build(system, nil))
	require.NoError(t, build(system, nil))
	assert.EqualError(t, build(system, clk), "ratelimit: Config.Clock is a *clock.Fake, but the layers built with this Limiter run on nil (the system's clock): a rate.Limiter counts its tokens on one clock")
}

// Bad tunings are refused, changing nothing.
func TestTune_LM13_BadTuning(t *testing.T) {
	lim := rate.NewLimiter(5, 3)
	assert.EqualError(t, ratelimit.Tune(nil, ratelimit.Tuning{}), "ratelimit: Tune's limiter must not be nil")
	assert.EqualError(t, ratelimit.Tune(lim, ratelimit.Tuning{Limit: -1}), "ratelimit: Tuning.Limit must be >= 0 (or rate.Inf), got -1")
	assert.EqualError(t, ratelimit.Tune(lim, ratelimit.Tuning{Limit: rate.Limit(math.NaN())}), "ratelimit: Tuning.Limit must be >= 0 (or rate.Inf), got NaN")
	assert.EqualError(t, ratelimit.Tune(lim, ratelimit.Tuning{Limit: 1, Burst: -2}), "ratelimit: Tuning.Burst must be >= 0, got -2")
	assert.EqualError(t, ratelimit.Tune(lim, ratelimit.Tuning{Limit: 100}), "ratelimit: Tuning.Burst must be >= 1 with a Limit of 100 per second (a zero Burst admits no call; a Limit of 0 admits none), got 0")
	assert.Equal(t, rate.Limit(5), lim.Limit())
	assert.Equal(t, 3, lim.Burst())
}

// Tune while calls flow through a layer (run with -race).
func TestTune_LM13_WhileCallsFlow(t *testing.T) {
	lim := rate.NewLimiter(1000, 10)
	l, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: lim, Mode: ratelimit.Refuse, Observer: observe.Func(func(context.Context, observe.Event) {})})
	require.NoError(t, err)
	svc := l.Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, nil }))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for j := range 300 {
			assert.NoError(t, ratelimit.Tune(lim, ratelimit.Tuning{Limit: rate.Limit(100 * (1 + j%5)), Burst: 1 + j%10}))
		}
	}()
	for range 1000 {
		_, _ = svc.Call(context.Background(), 0)
	}
	<-done
	assert.Equal(t, 10, lim.Burst(), "the last Tune")
}
