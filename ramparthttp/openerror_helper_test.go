package ramparthttp_test

import (
	"errors"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
)

// openFor returns the rejection of a breaker whose cool-down has
// retryAfter left, for ever: the breaker runs on a clock that stands
// still, so its OpenError.RetryAfter() is exactly retryAfter.
func openFor(retryAfter time.Duration) error {
	b, err := circuitbreaker.New(circuitbreaker.Config{
		Clock:        stoppedClock{},
		Policy:       circuitbreaker.Consecutive{Failures: 1},
		ResetTimeout: retryAfter,
	})
	if err != nil {
		panic(err)
	}
	p, _ := b.TryAcquire()
	p.Failure(errors.New("tripped"))
	_, err = b.TryAcquire()
	return err
}

// stoppedClock is a clock.Clock on which no time passes.
type stoppedClock struct{}

func (stoppedClock) Now() time.Time                              { return time.Unix(0, 0) }
func (stoppedClock) Monotonic() time.Duration                    { return 0 }
func (stoppedClock) AfterFunc(time.Duration, func()) clock.Timer { return stoppedTimer{} }

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return true }
