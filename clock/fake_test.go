package clock_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/nilcheck"
)

var wall = time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)

// Wall and monotonic readings move together on Advance and apart on
// Jump.
func TestFake_CK6_Readings(t *testing.T) {
	c := clock.NewFake(wall, time.Hour)
	assert.Equal(t, wall, c.Now())
	assert.Equal(t, time.Hour, c.Monotonic())
	c.Advance(time.Second)
	c.Jump(-time.Minute)
	assert.Equal(t, wall.Add(time.Second-time.Minute), c.Now())
	assert.Equal(t, time.Hour+time.Second, c.Monotonic())
	c.Advance(-time.Second) // taken as zero
	assert.Equal(t, time.Hour+time.Second, c.Monotonic())
	assert.Equal(t, clock.FakeStats{Now: 2, Monotonic: 3}, c.Stats())
}

// Timers fire at their due time, earliest first, ties in the order they
// were armed (a Reset re-arms), each seeing the clock at its time; a
// timer armed by a timer fires within the same Advance if it is due.
func TestFake_CK6_TimerOrder(t *testing.T) {
	c := clock.NewFake(wall, 0)
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Monotonic().String()) }
	}
	c.AfterFunc(2*time.Second, at("a"))
	b := c.AfterFunc(time.Second, at("b")).(*clock.FakeTimer)
	c.AfterFunc(2*time.Second, at("c"))
	c.AfterFunc(time.Second, func() {
		got = append(got, "d@"+c.Monotonic().String())
		c.AfterFunc(500*time.Millisecond, at("e"))
	})
	assert.True(t, b.Reset(2*time.Second), "b was pending")
	c.AfterFunc(0, at("now"))
	assert.Empty(t, got, "nothing runs before Advance")
	assert.Equal(t, 5, c.Pending())
	c.Advance(2 * time.Second)
	assert.Equal(t, []string{"now@0s", "d@1s", "e@1.5s", "a@2s", "c@2s", "b@2s"}, got)
	assert.Equal(t, wall.Add(2*time.Second), c.Now())
	assert.Zero(t, c.Pending())
}

// Stop and Reset report what time.Timer's do: whether the timer was
// pending.
func TestFake_CK6_StopAndReset(t *testing.T) {
	c := clock.NewFake(wall, 0)
	n := 0
	tm := c.AfterFunc(time.Second, func() { n++ }).(*clock.FakeTimer)
	assert.True(t, tm.Stop())
	assert.False(t, tm.Stop())
	c.Advance(time.Second)
	assert.Zero(t, n)
	assert.False(t, tm.Reset(time.Second), "stopped: not pending")
	c.Advance(time.Second - time.Nanosecond)
	assert.Zero(t, n)
	c.Advance(time.Nanosecond)
	assert.Equal(t, 1, n)
	assert.False(t, tm.Reset(time.Second), "fired: not pending")
	c.Advance(time.Second)
	assert.Equal(t, 2, n, "a fired timer can be reset")
}

// clock.Sleep on a Fake waits until a test advances it past the wait.
func TestFake_CK6_Sleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock.NewFake(wall, 0)
		done := make(chan error, 1)
		go func() { done <- clock.Sleep(context.Background(), c, time.Second) }()
		synctest.Wait()
		c.Advance(time.Second - time.Nanosecond)
		synctest.Wait()
		require.Len(t, done, 0)
		c.Advance(time.Nanosecond)
		assert.NoError(t, <-done)
	})
}

// Safe for concurrent use (run with -race).
func TestFake_CK6_Concurrent(t *testing.T) {
	c := clock.NewFake(wall, 0)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				c.AfterFunc(time.Millisecond, func() { _ = c.Now() }).Stop()
				c.AfterFunc(time.Millisecond, func() { _ = c.Monotonic() })
				c.Advance(time.Millisecond)
			}
		})
	}
	wg.Wait()
	c.Advance(time.Second)
	assert.Zero(t, c.Pending())
	assert.Equal(t, 400*time.Millisecond+time.Second, c.Monotonic())
}

// TestFake_NZ1_NilFake calls every exported method of a nil *Fake and of
// the timers it arms: a clock that never moves, whose timers never fire.
func TestFake_NZ1_NilFake(t *testing.T) {
	var c *clock.Fake
	fired := false
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Now", Call: func() any { return c.Now() }, Want: time.Time{}},
		{Name: "Monotonic", Call: func() any { return c.Monotonic() }, Want: time.Duration(0)},
		{Name: "AfterFunc", Call: func() any {
			timer := c.AfterFunc(0, func() { fired = true }).(*clock.FakeTimer)
			c.Advance(time.Hour)
			return []any{timer.Reset(time.Second), timer.Stop(), fired, c.Pending()}
		}, Want: []any{false, false, false, 0}},
		{Name: "Advance", Call: func() any { c.Advance(time.Hour); return c.Monotonic() }, Want: time.Duration(0)},
		{Name: "Jump", Call: func() any { c.Jump(time.Hour); return c.Now() }, Want: time.Time{}},
		{Name: "Pending", Call: func() any { return c.Pending() }, Want: 0},
		{Name: "Stats", Call: func() any { return c.Stats() }, Want: clock.FakeStats{}},
		{Name: "Sleep", Call: func() any {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return clock.Sleep(ctx, c, time.Second)
		}, Want: context.Canceled},
	})
}

// TestFakeTimer_NZ1_NilAndZeroFakeTimer: a timer of no clock never fires,
// and Stop and Reset say it was not pending.
func TestFakeTimer_NZ1_NilAndZeroFakeTimer(t *testing.T) {
	var nilTimer *clock.FakeTimer
	zero := new(clock.FakeTimer)
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "nil Stop", Call: func() any { return nilTimer.Stop() }, Want: false},
		{Name: "nil Reset", Call: func() any { return nilTimer.Reset(time.Second) }, Want: false},
		{Name: "zero Stop", Call: func() any { return zero.Stop() }, Want: false},
		{Name: "zero Reset", Call: func() any { return zero.Reset(time.Second) }, Want: false},
	})
}

// TestFake_NZ1_ZeroFakeIsNewFakeAtZero: the zero Fake is NewFake(time.Time{}, 0).
func TestFake_NZ1_ZeroFakeIsNewFakeAtZero(t *testing.T) {
	var c clock.Fake
	fired := false
	c.AfterFunc(time.Second, func() { fired = true })
	c.Advance(time.Second)
	assert.True(t, fired)
	assert.Equal(t, time.Second, c.Monotonic())
	assert.Equal(t, time.Time{}.Add(time.Second), c.Now())
}
