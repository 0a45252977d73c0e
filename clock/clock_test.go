package clock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/clock"
)

func TestSystem_ReadingsAndTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start, m0 := clock.System.Now(), clock.System.Monotonic()
		fired := make(chan time.Duration, 1)
		clock.System.AfterFunc(3*time.Second, func() { fired <- clock.System.Monotonic() - m0 })
		stopped := clock.System.AfterFunc(time.Second, func() { t.Error("a stopped timer fired") })
		assert.True(t, stopped.Stop())
		assert.Equal(t, 3*time.Second, <-fired)
		assert.Equal(t, 3*time.Second, clock.System.Now().Sub(start))
	})
}

func TestMonotonicTime(t *testing.T) {
	f := clock.NewFake(time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC), 7*time.Hour)
	t0 := clock.MonotonicTime(f)
	assert.Equal(t, time.Date(2000, 1, 1, 7, 0, 0, 0, time.UTC), t0, "the origin plus the monotonic reading")
	f.Jump(-time.Hour) // a wall step moves nothing
	assert.Equal(t, t0, clock.MonotonicTime(f))
	f.Advance(1500 * time.Millisecond)
	assert.Equal(t, 1500*time.Millisecond, clock.MonotonicTime(f).Sub(t0))
	synctest.Test(t, func(t *testing.T) {
		before := time.Now()
		time.Sleep(time.Second)
		assert.Equal(t, time.Second, clock.MonotonicTime(nil).Sub(before), "nil: the system's time")
	})
}
