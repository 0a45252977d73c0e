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
