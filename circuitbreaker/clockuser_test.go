package circuitbreaker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
)

// clockTracker is a user policy that keeps the clock the breaker gives it
// and the Monotonic reading of the last outcome.
type clockTracker struct {
	clock clock.Clock
	uses  int
	last  time.Duration
}

func (p *clockTracker) NewTracker() (circuitbreaker.Tracker, error) { return p, nil }
func (p *clockTracker) Record(c circuitbreaker.Call) bool {
	p.last = c.Monotonic
	return false
}
func (*clockTracker) Probe(circuitbreaker.Call, circuitbreaker.Probes) circuitbreaker.Verdict {
	return circuitbreaker.VerdictPending
}
func (*clockTracker) Reset(circuitbreaker.State)    {}
func (*clockTracker) Counts() circuitbreaker.Counts { return circuitbreaker.Counts{} }
func (p *clockTracker) UseClock(c clock.Clock) {
	p.clock = c
	p.uses++
}

func TestPolicy_CB12_UserTrackerReceivesTheBreakersClock(t *testing.T) {
	fc := newFakeClock()
	p := &clockTracker{}
	b := newBreaker(t, circuitbreaker.Config{Policy: p, Clock: fc})
	require.NotNil(t, p.clock)
	assert.Equal(t, 1, p.uses, "given once, when the breaker is built")

	fc.Advance(5 * time.Second)
	assert.Equal(t, 5*time.Second, p.clock.Monotonic(), "Monotonic shares the origin of Call.Monotonic")
	succeed(t, b, 1)
	assert.Equal(t, 5*time.Second, p.last)
	assert.Equal(t, fc.Now(), p.clock.Now(), "the wall reading is Config.Clock's")

	fired := false
	p.clock.AfterFunc(time.Second, func() { fired = true })
	fc.Advance(999 * time.Millisecond)
	assert.False(t, fired)
	fc.Advance(time.Millisecond)
	assert.True(t, fired, "timers run on Config.Clock")
}

func TestPolicy_CB12_UserTrackerReceivesTheSystemClockWithoutConfigClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &clockTracker{}
		b := newBreaker(t, circuitbreaker.Config{Policy: p})
		require.NotNil(t, p.clock, "never nil: the system's clock")
		time.Sleep(3 * time.Second)
		assert.Equal(t, 3*time.Second, p.clock.Monotonic())
		_, err := circuitbreaker.Run(context.Background(), b, func(context.Context) (int, error) { return 1, nil })
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second, p.last)
		assert.Equal(t, time.Now(), p.clock.Now())
		start := time.Now()
		done := make(chan time.Duration, 1)
		p.clock.AfterFunc(2*time.Second, func() { done <- time.Since(start) })
		assert.Equal(t, 2*time.Second, <-done)
	})
}
