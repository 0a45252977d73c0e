package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// rampart's contenders, one function per scenario. Each uses rampart's
// documented defaults (circuitbreaker.Config{}: 5 consecutive failures
// trip; retry.Config{}: 3 attempts, exponential backoff with full jitter
// from 100ms; budget.Config{}: Finagle's 10s window, 10 retries per second,
// ratio 0.2) unless the scenario says otherwise.

func rampartClosed() []contender {
	return []contender{
		{name: "rampart", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
			return circuitbreaker.NewLayer[Req, Resp](newBreaker(b, circuitbreaker.Config{}), nil)
		}},
		{name: "rampart-permit", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
			return permitLayer(newBreaker(b, circuitbreaker.Config{}))
		}},
	}
}

// rampartPolicies returns rampart's layer with each of the other built-in
// policies, configured as in CountWindow, TimeWindow and SlowCalls, named
// rampart-count, rampart-time and rampart-slow.
func rampartPolicies() []contender {
	return []contender{
		rampartPolicy("rampart-count", countWindowPolicy),
		rampartPolicy("rampart-time", timeWindowPolicy),
		rampartPolicy("rampart-slow", slowCallsPolicy),
	}
}

func rampartOpen() []contender {
	return []contender{{name: "rampart", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
		layer := circuitbreaker.NewLayer[Req, Resp](newBreaker(b, circuitbreaker.Config{CoolDown: coolDown}), nil)
		trip(b, layer, circuitbreaker.DefaultFailures)
		return layer
	}}}
}

// rampartRetry is the retry layer without a budget, as the scenario's
// peers have none: budget.Always said explicitly, since a layer left
// without a Budget gets a default budget of its own.
func rampartRetry() []contender {
	return []contender{{name: "rampart", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
		return must(b)(retry.NewLayer(retry.Config[Req, Resp]{Budget: budget.Always}))
	}}}
}

func rampartRetryStack() []contender {
	return []contender{{name: "rampart", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
		return stack(
			must(b)(retry.NewLayer(retry.Config[Req, Resp]{Budget: newBudget(b, budget.Config{})})),
			circuitbreaker.NewLayer[Req, Resp](newBreaker(b, circuitbreaker.Config{}), nil),
		)
	}}}
}

func rampartTimeout() []contender {
	return []contender{{name: "rampart", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
		return must(b)(timeout.NewLayer(timeout.Config[Req, Resp]{Timeout: limit}))
	}}}
}

func rampartTimeoutStack() []contender {
	return []contender{{name: "rampart", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
		return stack(
			must(b)(timeout.NewLayer(timeout.Config[Req, Resp]{Timeout: limit})),
			must(b)(retry.NewLayer(retry.Config[Req, Resp]{Budget: newBudget(b, budget.Config{})})),
			circuitbreaker.NewLayer[Req, Resp](newBreaker(b, circuitbreaker.Config{}), nil),
		)
	}}}
}

// rampartPolicy returns the contender name: rampart's layer guarding with
// a breaker of policy p.
func rampartPolicy(name string, p circuitbreaker.Policy) contender {
	return contender{name: name, newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
		return circuitbreaker.NewLayer[Req, Resp](newBreaker(b, circuitbreaker.Config{Policy: p}), nil)
	}}
}

// permitLayer guards the inner service with br's permits directly,
// without the layer's context check and panic accounting: the cost of the
// breaker primitive alone.
func permitLayer(br *circuitbreaker.Breaker) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		return permitService{br: br, inner: inner}
	})
}

type permitService struct {
	br    *circuitbreaker.Breaker
	inner rampart.Service[Req, Resp]
}

func (s permitService) Call(ctx context.Context, req Req) (Resp, error) {
	p, err := s.br.TryAcquire()
	if err != nil {
		return 0, err
	}
	resp, err := s.inner.Call(ctx, req)
	p.Done(err)
	return resp, err
}

// stack returns a layer of layers, the first outermost, as a Builder
// stacks them.
func stack(layers ...rampart.Layer[Req, Resp]) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		builder := rampart.NewBuilder[Req, Resp]()
		for _, l := range layers {
			builder = builder.Layer(l)
		}
		return builder.Service(inner)
	})
}

func newBreaker(b *testing.B, cfg circuitbreaker.Config) *circuitbreaker.Breaker {
	br, err := circuitbreaker.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return br
}

func newBudget(b *testing.B, cfg budget.Config) *budget.Budget {
	bud, err := budget.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return bud
}

// must returns a function that returns l, or fails b if err is not nil.
func must(b *testing.B) func(l rampart.Layer[Req, Resp], err error) rampart.Layer[Req, Resp] {
	return func(l rampart.Layer[Req, Resp], err error) rampart.Layer[Req, Resp] {
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
}

// window is the period of every time-window contender.
const window = 10 * time.Second
