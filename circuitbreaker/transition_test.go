package circuitbreaker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

// A trip's event carries the counts it was decided on: a window's calls
// and failures, then, for a re-open, the probes judged and failed.
func TestBreaker_EV15_TripCarriesItsCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		b := newBreaker(t, circuitbreaker.Config{
			Name: "db", Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 10}, Ratio: 0.5},
			CoolDown: time.Second, Observer: &rec,
		})
		succeed(t, b, 5)
		fail(t, b, 5, errBoom) // the tenth call: 5 of 10 failed
		time.Sleep(time.Second)
		fail(t, b, 1, errBoom) // the probe fails: re-open
		var trips []observe.Event
		for _, e := range rec.Events() {
			if e.Kind == observe.Transition && e.To == "open" {
				trips = append(trips, e)
			}
		}
		require.Len(t, trips, 2)
		require.Equal(t, [2]int{10, 5}, [2]int{trips[0].Calls, trips[0].Failures})
		require.Equal(t, [2]int{1, 1}, [2]int{trips[1].Calls, trips[1].Failures})
	})
}
