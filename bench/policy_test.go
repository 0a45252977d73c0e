package bench_test

import (
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fscircuitbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/sony/gobreaker/v2"
)

// The other built-in breaker policies, each on calls that fail one in ten
// (exercising both the success and the failure path), against the peers'
// nearest equivalent. A failure ratio of one half is never reached, so no
// breaker trips.

func BenchmarkCountWindow(b *testing.B)         { countWindow().run(b, false) }
func BenchmarkCountWindowParallel(b *testing.B) { countWindow().run(b, true) }
func BenchmarkTimeWindow(b *testing.B)          { timeWindow().run(b, false) }
func BenchmarkTimeWindowParallel(b *testing.B)  { timeWindow().run(b, true) }
func BenchmarkSlowCalls(b *testing.B)           { slowCalls().run(b, false) }
func BenchmarkSlowCallsParallel(b *testing.B)   { slowCalls().run(b, true) }

// rampart's policies in these scenarios (and in ClosedSuccess).
var (
	countWindowPolicy = circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 100}, Ratio: 0.5}
	timeWindowPolicy  = circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: window, Buckets: 10, MinCalls: 20}, Ratio: 0.5}
	slowCallsPolicy   = circuitbreaker.SlowCalls{Threshold: time.Second}
)

// countWindow: trip when half of the last 100 calls failed.
func countWindow() scenario {
	return scenario{failEvery: 10, want: tenthFails, contenders: []contender{
		floor,
		rampartPolicy("rampart", countWindowPolicy),
		{name: "failsafe", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			cb := fscircuitbreaker.NewBuilder[Resp]().WithFailureThresholdRatio(50, 100).WithDelay(time.Minute).Build()
			return failsafeLayer(failsafe.With[Resp](cb))
		}},
	}}
}

// timeWindow: trip when half of the calls of the last 10 seconds (10
// buckets of one second) failed, once there were at least 20.
func timeWindow() scenario {
	return scenario{failEvery: 10, want: tenthFails, contenders: []contender{
		floor,
		rampartPolicy("rampart", timeWindowPolicy),
		{name: "gobreaker", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			return gobreakerLayer(gobreaker.NewCircuitBreaker[Resp](gobreaker.Settings{
				Name:         "bench",
				Interval:     window,
				BucketPeriod: window / 10,
				ReadyToTrip: func(c gobreaker.Counts) bool {
					return c.Requests >= 20 && 2*c.TotalFailures >= c.Requests
				},
			}))
		}},
		{name: "failsafe", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			cb := fscircuitbreaker.NewBuilder[Resp]().WithFailureRateThreshold(0.5, 20, window).WithDelay(time.Minute).Build()
			return failsafeLayer(failsafe.With[Resp](cb))
		}},
	}}
}

// slowCalls: trip when every one of the last 100 calls took a second or
// more. No peer has a slow-call policy.
func slowCalls() scenario {
	return scenario{failEvery: 10, want: tenthFails, contenders: []contender{
		floor,
		rampartPolicy("rampart", slowCallsPolicy),
	}}
}
