package circuitbreaker_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
)

// What an unset Config.Clock saves on the paths that read time: the
// policies that time calls (SlowCalls: a reading when the permit is taken
// and one when it is finished) or that place outcomes in time (the time
// window's FailureRate: its failures, and its successes near a bucket
// boundary). Each runs with Config.Clock left nil (the system's clock,
// read directly) and set to clock.System (the same clock behind the Clock
// interface), every 10th call a failure that cannot trip the policy.
// bench/README.md records the difference: the unset clock is the cheaper
// one, since a supplied Clock is read twice for each outcome a policy
// places in time (Now and Monotonic), the system's clock once (a
// time.Now carries both readings).

// clockConfigs returns a Config for each policy that reads the clock on
// its hot path, with Clock left nil and set to clock.System, named
// policy/clock.
func clockConfigs() map[string]circuitbreaker.Config {
	policies := map[string]circuitbreaker.Policy{
		"SlowCalls":  circuitbreaker.SlowCalls{Threshold: time.Second},
		"TimeWindow": circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: 20}, Ratio: 0.5},
	}
	configs := map[string]circuitbreaker.Config{}
	for name, p := range policies {
		configs[name+"/nil"] = circuitbreaker.Config{Policy: p}
		configs[name+"/System"] = circuitbreaker.Config{Policy: p, Clock: clock.System}
	}
	return configs
}

// tenthFails returns a function making one call through b, the n-th a
// failure when n is a multiple of 10.
func tenthFails(b *circuitbreaker.Breaker) func() {
	n := 0
	return func() {
		n++
		p, _ := b.TryAcquire()
		if n%10 == 0 {
			p.Failure(errBoom)
			return
		}
		p.Success()
	}
}

func BenchmarkClock_Policies(b *testing.B) {
	for _, name := range slices.Sorted(maps.Keys(clockConfigs())) {
		b.Run(name, func(b *testing.B) {
			br := newBreaker(b, clockConfigs()[name])
			call := tenthFails(br)
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
			if s := br.State().State; s != circuitbreaker.Closed {
				b.Fatalf("state %v after the loop, want Closed", s)
			}
		})
	}
}

// Neither an unset clock nor a supplied one allocates on the paths that
// read it, successes and failures alike.
func TestAllocs_ClockReadingPolicies(t *testing.T) {
	for name, cfg := range clockConfigs() {
		t.Run(name, func(t *testing.T) {
			br := newBreaker(t, cfg)
			assert.Zero(t, testing.AllocsPerRun(1000, tenthFails(br)))
			assert.Equal(t, circuitbreaker.Closed, br.State().State)
		})
	}
}
