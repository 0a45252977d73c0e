package circuitbreaker_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

// A Tune during Open keeps the period's deadline to the nanosecond; the
// new cool-down is the next trip's.
func TestTune_CB24_OpenKeepsItsCoolDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		b, err := circuitbreaker.New(circuitbreaker.Config{Name: "b", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 10 * time.Second, Observer: &rec})
		require.NoError(t, err)
		p, err := b.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBoom) // trips now, until now+10s
		time.Sleep(3 * time.Second)
		require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Second}))
		_, err = b.TryAcquire()
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, 7*time.Second, oe.RetryAfter(), "the deadline is the one it opened with")
		time.Sleep(7*time.Second - time.Nanosecond)
		_, err = b.TryAcquire()
		require.ErrorIs(t, err, circuitbreaker.ErrOpen, "a nanosecond before the end")
		time.Sleep(time.Nanosecond)
		p, err = b.TryAcquire()
		require.NoError(t, err, "the probe at the deadline")
		p.Failure(errBoom) // re-opens with the new constant cool-down
		_, err = b.TryAcquire()
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, time.Second, oe.RetryAfter())
		var kinds []observe.Kind
		for _, e := range rec.Events() {
			if e.Kind == observe.Tuned {
				kinds = append(kinds, e.Kind)
				assert.Equal(t, "b", e.Name)
			}
		}
		assert.Len(t, kinds, 1, "the change is an event")
	})
}

// A growing schedule continues from the current cool-down, brought within
// the new bounds.
func TestTune_CB24_GrowingSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second,
			MaxCoolDown: time.Minute, CoolDownMultiplier: 2})
		require.NoError(t, err)
		fail := func() {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			p.Failure(errBoom)
		}
		fail() // Open 1s
		require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: 5 * time.Second, MaxCoolDown: 8 * time.Second, CoolDownMultiplier: 2}))
		time.Sleep(time.Second)
		fail() // the probe fails: 5s (the current 1s raised to the new floor) doubled, capped at 8s
		_, err = b.TryAcquire()
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, 8*time.Second, oe.RetryAfter())
	})
}

// A HalfOpen period admits probes by the new MaxProbes at once.
func TestTune_CB24_MaxProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second, MaxProbes: 1})
		require.NoError(t, err)
		p, err := b.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBoom)
		time.Sleep(time.Second)
		_, err = b.TryAcquire()
		require.NoError(t, err)
		_, err = b.TryAcquire()
		require.ErrorIs(t, err, circuitbreaker.ErrOpen, "one probe slot")
		require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Second, MaxProbes: 3}))
		for range 2 {
			_, err = b.TryAcquire()
			require.NoError(t, err)
		}
		_, err = b.TryAcquire()
		require.ErrorIs(t, err, circuitbreaker.ErrOpen, "three probe slots")
		assert.Equal(t, circuitbreaker.HalfOpen, b.State().State)
	})
}

// A bad Tuning is New's error, and changes nothing.
func TestTune_CB24_BadTuning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 2 * time.Second})
		require.NoError(t, err)
		assert.EqualError(t, b.Tune(circuitbreaker.Tuning{MaxProbes: 5000}), "circuitbreaker: MaxProbes must be in [0, 1024], got 5000")
		assert.EqualError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Second, MaxCoolDown: time.Millisecond}), "circuitbreaker: MaxCoolDown must be >= CoolDown (1s), got 1ms")
		p, err := b.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBoom)
		_, err = b.TryAcquire()
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, 2*time.Second, oe.RetryAfter(), "the old cool-down")
	})
}

// Tune is safe while calls flow (run with -race), and a zero Breaker can
// be tuned.
func TestTune_CB24_WhileCallsFlow(t *testing.T) {
	var b circuitbreaker.Breaker
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 500 {
				if i == 0 {
					require.NoError(t, b.Tune(circuitbreaker.Tuning{CoolDown: time.Duration(j%3) * time.Millisecond, MaxProbes: 1 + j%4}))
					continue
				}
				if p, err := b.TryAcquire(); err == nil {
					if j%3 == 0 {
						p.Failure(errBoom)
					} else {
						p.Success()
					}
				}
			}
		})
	}
	wg.Wait()
}

// A tuned breaker's Closed success costs what an untuned one's does: Tune
// adds nothing to the path.
func BenchmarkTune_ClosedSuccessAfterTune(b *testing.B) {
	for _, tuned := range []bool{false, true} {
		br, err := circuitbreaker.New(circuitbreaker.Config{})
		require.NoError(b, err)
		if tuned {
			require.NoError(b, br.Tune(circuitbreaker.Tuning{CoolDown: time.Second, MaxProbes: 2}))
		}
		b.Run(map[bool]string{false: "untuned", true: "tuned"}[tuned], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, _ := br.TryAcquire()
				p.Success()
			}
		})
	}
}
