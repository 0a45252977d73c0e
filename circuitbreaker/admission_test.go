package circuitbreaker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
)

// TryAcquire's Open fast path reports every refusal to the Observer and
// allocates nothing doing so: the same event as the slow path's, for each
// call.
func TestTryAcquire_EV12_OpenRefusalObservedWithoutAllocating(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var obs observetest.Counter
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute, Observer: &obs})
		fail(t, b, 1, errBoom)
		before := obs.Outcomes()["rejected"]
		const runs = 1000
		allocs := testing.AllocsPerRun(runs, func() {
			if _, err := b.TryAcquire(); err == nil {
				t.Fatal("TryAcquire on an Open breaker gave a permit")
			}
		})
		assert.Zero(t, allocs)
		// AllocsPerRun calls the function once more to warm up.
		require.Equal(t, before+runs+1, obs.Outcomes()["rejected"])
	})
}
