package ramparthttp_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/ramparthttp"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// client stack hands contexts to response bodies and retries with timers,
// and the server side must start none per request.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// breakerLayer returns ramparthttp.BreakerLayer(cfg), failing t on error.
func breakerLayer(t testing.TB, cfg ramparthttp.BreakerConfig) ramparthttp.Layer {
	t.Helper()
	l, err := ramparthttp.BreakerLayer(cfg)
	require.NoError(t, err)
	return l
}

// openFor returns the refusal of a breaker whose cool-down has
// retryAfter left, for ever: the breaker runs on a clock that stands
// still, so its OpenError.RetryAfter() is exactly retryAfter.
func openFor(retryAfter time.Duration) error {
	b, err := circuitbreaker.New(circuitbreaker.Config{
		Clock:    stoppedClock{},
		Policy:   circuitbreaker.Consecutive{Failures: 1},
		CoolDown: retryAfter,
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

// countingBudget is a retry budget that counts deposits and grants every
// withdrawal.
type countingBudget struct{ deposits atomic.Int32 }

func (b *countingBudget) Deposit()       { b.deposits.Add(1) }
func (b *countingBudget) Withdraw() bool { return true }
