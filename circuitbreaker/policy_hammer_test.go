package circuitbreaker_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// TestPolicies_CB12_Hammer drives each window policy from many goroutines,
// with the breaker tripping and closing all the time, and checks the
// invariants of every snapshot: a count window never holds more than its
// size, failures and slow calls never exceed calls, probes in flight never
// exceed MaxProbes. Run it with -race. Afterwards the policy still counts
// exactly. It runs in a bubble so that failing calls take exactly a
// millisecond: slow for SlowCalls, and the time window rotates.
func TestPolicies_CB12_Hammer(t *testing.T) {
	const (
		size      = 20
		maxProbes = 3
	)
	tests := []struct {
		name     string
		policy   circuitbreaker.Policy
		maxCalls int // bound on Counts.Calls; 0 for none
	}{
		{name: "FailureRateCount", maxCalls: size, policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Size: size, MinCalls: 5}, Ratio: 0.4,
		}},
		{name: "FailureRateTime", policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Period: time.Second, MinCalls: 5}, Ratio: 0.4,
		}},
		{name: "SlowCalls", maxCalls: size, policy: circuitbreaker.SlowCalls{
			Threshold: time.Millisecond, Window: circuitbreaker.Window{Size: size}, Ratio: 0.5,
		}},
		{name: "SuccessRateAny", maxCalls: size, policy: circuitbreaker.SuccessRate{
			Trip: circuitbreaker.Any(
				circuitbreaker.Consecutive{Failures: 4},
				circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: size, MinCalls: 5}, Ratio: 0.4},
			),
			Probes: 6, Ratio: 0.5,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBreaker(t, circuitbreaker.Config{
					Policy: tt.policy, CoolDown: circuitbreaker.Immediate, MaxProbes: maxProbes,
				})
				var trips atomic.Int64
				b.Subscribe(func(tr circuitbreaker.Transition) {
					if tr.To == circuitbreaker.Open {
						trips.Add(1)
					}
				})
				var wg sync.WaitGroup
				for g := range 8 {
					wg.Go(func() {
						for i := range 2000 {
							p, err := b.TryAcquire()
							if err != nil {
								continue
							}
							if (i*7+g)%5 < 3 { // three calls in five fail, slowly
								time.Sleep(time.Millisecond)
								p.Failure(errBoom)
							} else {
								p.Success()
							}
							if i%16 != 0 {
								continue
							}
							s := b.State()
							c := s.Counts
							if tt.maxCalls > 0 {
								assert.LessOrEqual(t, c.Calls, tt.maxCalls)
							}
							assert.LessOrEqual(t, c.Failures, c.Calls)
							assert.LessOrEqual(t, c.SlowCalls, c.Calls)
							assert.LessOrEqual(t, s.ProbesInFlight, maxProbes)
						}
					})
				}
				wg.Wait()
				assert.NotZero(t, trips.Load(), "the policy tripped")

				b.Reset()
				require.Equal(t, circuitbreaker.Snapshot{}, b.State())
				outcomes(t, b, "FSSSS") // below every ratio and run above
				assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: 5, Failures: 1}}, b.State())
			})
		})
	}
}
