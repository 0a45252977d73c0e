package circuitbreaker_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

func TestBreaker_EV9_TransitionsReachTheObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		errDown := errors.New("down")
		b := newBreaker(t, circuitbreaker.Config{
			Name: "db", Policy: circuitbreaker.Consecutive{Failures: 2}, ResetTimeout: time.Second, Observer: &rec,
		})
		fail(t, b, 2, errDown)
		time.Sleep(time.Second)
		succeed(t, b, 1)

		ev := func(from, to string, cause error) observe.Event {
			return observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: from, To: to, Err: cause}
		}
		require.Equal(t, []observe.Event{
			ev("closed", "open", errDown),
			ev("open", "half-open", nil),
			ev("half-open", "closed", nil),
		}, rec.Events())
	})
}
