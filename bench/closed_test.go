package bench_test

import (
	"math"
	"testing"
	"time"

	"github.com/afex/hystrix-go/hystrix"
	resbreaker "github.com/eapache/go-resiliency/breaker"
	"github.com/failsafe-go/failsafe-go"
	fscircuitbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/rampart-go/rampart"
	"github.com/sony/gobreaker/v2"
)

// The closed-breaker scenarios: every contender trips after 5 (gobreaker:
// more than 5) consecutive failures, or never, so calls that fail one in ten
// never trip any of them.

func BenchmarkClosedSuccess(b *testing.B)         { closedSuccess().run(b, false) }
func BenchmarkClosedSuccessParallel(b *testing.B) { closedSuccess().run(b, true) }
func BenchmarkClosedFail10(b *testing.B)          { closedFail10().run(b, false) }
func BenchmarkClosedFail10Parallel(b *testing.B)  { closedFail10().run(b, true) }

func closedSuccess() scenario {
	// The other built-in policies' success path, for comparison; their
	// 10%-failure costs are in CountWindow, TimeWindow and SlowCalls.
	return scenario{want: allSucceed, contenders: append(closedContenders(5), rampartPolicies()...)}
}

func closedFail10() scenario {
	// go-resiliency counts every failure within its timeout, not consecutive
	// ones, so only an unreachable threshold keeps it closed.
	return scenario{failEvery: 10, want: tenthFails, contenders: closedContenders(math.MaxInt32)}
}

// closedContenders returns the floor, rampart and the peers, each a closed
// breaker with its default (or the nearest to a 5-consecutive-failures)
// trip rule; resiliencyErrors is go-resiliency's error threshold.
func closedContenders(resiliencyErrors int) []contender {
	return append([]contender{floor}, append(rampartClosed(),
		contender{name: "gobreaker", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			return gobreakerLayer(gobreaker.NewCircuitBreaker[Resp](gobreaker.Settings{Name: "bench"}))
		}},
		contender{name: "failsafe", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			cb := fscircuitbreaker.NewBuilder[Resp]().WithFailureThreshold(5).WithDelay(time.Minute).Build()
			return failsafeLayer(failsafe.With[Resp](cb))
		}},
		contender{name: "hystrix", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
			return hystrixLayer(hystrixCommand(b, hystrixClosed))
		}},
		contender{name: "resiliency", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			return resiliencyLayer(nil, resbreaker.New(resiliencyErrors, 1, time.Minute))
		}},
	)...)
}

// hystrixClosed is hystrix-go's default command configuration except
// MaxConcurrentRequests: hystrix.DoC returns before the command's goroutine
// hands its ticket back, so a tight loop outruns the default pool of 10
// tickets and would be refused with ErrMaxConcurrency.
var hystrixClosed = hystrix.CommandConfig{
	Timeout:                hystrix.DefaultTimeout,
	MaxConcurrentRequests:  1 << 20,
	RequestVolumeThreshold: hystrix.DefaultVolumeThreshold,
	SleepWindow:            hystrix.DefaultSleepWindow,
	ErrorPercentThreshold:  hystrix.DefaultErrorPercentThreshold,
}
