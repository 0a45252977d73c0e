package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/afex/hystrix-go/hystrix"
	resbreaker "github.com/eapache/go-resiliency/breaker"
	"github.com/failsafe-go/failsafe-go"
	fscircuitbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/rampart-go/rampart"
	"github.com/sony/gobreaker/v2"
)

// The open-breaker scenario: each breaker is tripped before the timed loop,
// with a one-hour cool-down, so every call is refused without reaching the
// backend. The floor is the direct call, for scale.

func BenchmarkOpenReject(b *testing.B)         { openReject().run(b, false) }
func BenchmarkOpenRejectParallel(b *testing.B) { openReject().run(b, true) }

// coolDown outlasts any benchmark run.
const coolDown = time.Hour

func openReject() scenario {
	return scenario{want: allRejected, contenders: append([]contender{floorRejecting}, append(rampartOpen(),
		contender{name: "gobreaker", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
			layer := gobreakerLayer(gobreaker.NewCircuitBreaker[Resp](gobreaker.Settings{Name: "bench", Timeout: coolDown}))
			trip(b, layer, 6)
			return layer
		}},
		contender{name: "failsafe", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			cb := fscircuitbreaker.NewBuilder[Resp]().WithFailureThreshold(5).WithDelay(coolDown).Build()
			cb.Open()
			return failsafeLayer(failsafe.With[Resp](cb))
		}},
		contender{name: "hystrix", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
			cfg := hystrixClosed
			cfg.SleepWindow = int(coolDown / time.Millisecond)
			name := hystrixCommand(b, cfg)
			layer := hystrixLayer(name)
			// hystrix-go decides to open from metrics that a goroutine
			// collects asynchronously, so fail until it has.
			circuit, _, err := hystrix.GetCircuit(name)
			if err != nil {
				b.Fatal(err)
			}
			for !circuit.IsOpen() {
				trip(b, layer, hystrix.DefaultVolumeThreshold)
			}
			return layer
		}},
		contender{name: "resiliency", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
			layer := resiliencyLayer(nil, resbreaker.New(5, 1, coolDown))
			trip(b, layer, 5)
			return layer
		}},
	)...)}
}

// floorRejecting is the floor of the open scenario: the backend is not
// called, and the cheapest refusal returns a prebuilt error.
var floorRejecting = contender{name: "floor", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		return rejecter{}
	})
}}

type rejecter struct{}

func (rejecter) Call(context.Context, Req) (Resp, error) { return 0, errBackend }

// trip sends n failing calls through layer.
func trip(b *testing.B, layer rampart.Layer[Req, Resp], n int) {
	svc := layer.Wrap(&backend{failEvery: 1})
	for range n {
		if _, err := svc.Call(context.Background(), 1); err == nil {
			b.Fatal("a failing call succeeded")
		}
	}
}
