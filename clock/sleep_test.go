package clock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/clock"
)

func TestSleep_WaitsExactlyD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		assert.NoError(t, clock.Sleep(t.Context(), clock.System, 3*time.Second))
		assert.Equal(t, 3*time.Second, time.Since(start))
	})
}

func TestSleep_ReturnsAtOnceForNonPositiveD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		assert.NoError(t, clock.Sleep(t.Context(), clock.System, 0))
		assert.NoError(t, clock.Sleep(t.Context(), clock.System, -time.Second))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		assert.Equal(t, context.Canceled, clock.Sleep(ctx, clock.System, 0))
		assert.Equal(t, time.Duration(0), time.Since(start))
	})
}

func TestSleep_ContextDoneFirstStopsTheTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &countingClock{}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		assert.Equal(t, context.DeadlineExceeded, clock.Sleep(ctx, c, time.Hour))
		assert.Equal(t, time.Second, time.Since(start))
		assert.Equal(t, 1, c.timers)
		assert.Equal(t, 1, c.stopped, "the timer is stopped before Sleep returns")
	})
}

func TestSleep_UsesTheClocksSleeper(t *testing.T) {
	errWoken := errors.New("woken")
	s := &sleeperClock{err: errWoken}
	assert.Equal(t, errWoken, clock.Sleep(t.Context(), s, 2*time.Second))
	assert.Equal(t, []time.Duration{2 * time.Second}, s.slept)
	assert.Equal(t, 0, s.timers, "a Sleeper is not asked for a timer")
}

// countingClock is the system clock counting its timers and their stops.
type countingClock struct {
	timers, stopped int
}

func (c *countingClock) Now() time.Time           { return time.Now() }
func (c *countingClock) Monotonic() time.Duration { return clock.System.Monotonic() }
func (c *countingClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.timers++
	return countedTimer{t: time.AfterFunc(d, f), c: c}
}

type countedTimer struct {
	t *time.Timer
	c *countingClock
}

func (t countedTimer) Stop() bool {
	t.c.stopped++
	return t.t.Stop()
}

// sleeperClock is a Sleeper that records its sleeps and returns err.
type sleeperClock struct {
	countingClock
	err   error
	slept []time.Duration
}

func (s *sleeperClock) Sleep(_ context.Context, d time.Duration) error {
	s.slept = append(s.slept, d)
	return s.err
}
