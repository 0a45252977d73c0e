package bench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/afex/hystrix-go/hystrix"
	resbreaker "github.com/eapache/go-resiliency/breaker"
	"github.com/eapache/go-resiliency/retrier"
	"github.com/failsafe-go/failsafe-go"
	"github.com/sony/gobreaker/v2"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// Req and Resp are the request and response types of every benchmarked
// service: small values, so that no benchmark measures copying.
type (
	Req  = int
	Resp = int
)

// errBackend is the failure the backend returns on its failing calls.
var errBackend = errors.New("bench: backend failure")

// backend is the protected service: a no-op that answers req and fails every
// failEvery-th call (never when failEvery is 0). Each benchmark goroutine owns
// one, so it counts without atomics and the pattern is exact per goroutine.
//
// It fills a cache line of its own (64-byte objects are 64-byte aligned),
// so that the backend one goroutine writes on every call never shares a
// line with what another goroutine reads (false sharing would slow every
// contender's parallel rows by chance of allocation).
type backend struct {
	failEvery int
	countdown int
	calls     int
	_         [64 - 24]byte
}

func (s *backend) Call(_ context.Context, req Req) (Resp, error) {
	s.calls++
	if s.failEvery == 0 {
		return req, nil
	}
	s.countdown++
	if s.countdown == s.failEvery {
		s.countdown = 0
		return 0, errBackend
	}
	return req, nil
}

// outcome is what every call of a scenario must add up to, checked after the
// timed loop so that a misconfigured contender (a breaker that trips in the
// 10%-failure scenario, a retry that retries a success) fails the benchmark
// instead of reporting a misleading number.
type outcome int

const (
	allSucceed  outcome = iota // every call reaches the backend and succeeds
	tenthFails                 // every call reaches the backend; every 10th fails
	allRejected                // no call reaches the backend; every call fails
)

// contender is one library's way of doing a scenario's work, built as a
// rampart Layer around the backend. newLayer builds fresh state (a breaker,
// a budget) for one run of the sub-benchmark, outside the timed region; a
// nil newLayer is the floor: the backend called directly.
type contender struct {
	name     string
	newLayer func(b *testing.B) rampart.Layer[Req, Resp]
}

// scenario is one piece of work done by every contender.
type scenario struct {
	failEvery  int
	want       outcome
	contenders []contender
}

// run runs each contender as a sub-benchmark named after it, serially with
// b.Loop or, when parallel, with b.RunParallel: GOMAXPROCS goroutines share
// the layer's state (one breaker, one budget) and each owns a backend.
func (s scenario) run(b *testing.B, parallel bool) {
	for _, c := range s.contenders {
		b.Run(c.name, func(b *testing.B) {
			var layer rampart.Layer[Req, Resp]
			if c.newLayer != nil {
				layer = c.newLayer(b)
			}
			b.ReportAllocs()
			if parallel {
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					inner := &backend{failEvery: s.failEvery}
					svc := rampart.NewBuilder[Req, Resp]().Layer(layer).Service(inner)
					ctx := context.Background()
					var calls, failed int
					for pb.Next() {
						if _, err := svc.Call(ctx, 1); err != nil {
							failed++
						}
						calls++
					}
					s.check(b, calls, failed, inner.calls)
				})
				return
			}
			inner := &backend{failEvery: s.failEvery}
			svc := rampart.NewBuilder[Req, Resp]().Layer(layer).Service(inner)
			ctx := context.Background()
			var calls, failed int
			for b.Loop() {
				if _, err := svc.Call(ctx, 1); err != nil {
					failed++
				}
				calls++
			}
			s.check(b, calls, failed, inner.calls)
		})
	}
}

// check reports an error unless calls calls, of which failed failed, and
// reached backend calls of the backend, add up to the scenario's outcome.
// It is safe to call from RunParallel's goroutines.
func (s scenario) check(b *testing.B, calls, failed, reached int) {
	var wantReached, wantFailed int
	switch s.want {
	case allSucceed:
		wantReached, wantFailed = calls, 0
	case tenthFails:
		wantReached, wantFailed = calls, calls/s.failEvery
	case allRejected:
		wantReached, wantFailed = 0, calls
	}
	if reached != wantReached || failed != wantFailed {
		b.Errorf("%d calls: %d reached the backend and %d failed, want %d and %d",
			calls, reached, failed, wantReached, wantFailed)
	}
}

// floor is the contender that calls the backend directly.
var floor = contender{name: "floor"}

// Each peer is adapted to a rampart Layer whose service is a small struct with
// a Call method: one interface call per request, like rampart's own layers,
// and a closure over the request that does not escape unless the peer makes
// it escape.

// gobreakerLayer guards the inner service with a sony/gobreaker breaker,
// through CircuitBreaker.Execute.
func gobreakerLayer(cb *gobreaker.CircuitBreaker[Resp]) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		return gobreakerService{cb: cb, inner: inner}
	})
}

type gobreakerService struct {
	cb    *gobreaker.CircuitBreaker[Resp]
	inner rampart.Service[Req, Resp]
}

func (s gobreakerService) Call(ctx context.Context, req Req) (Resp, error) {
	return s.cb.Execute(func() (Resp, error) { return s.inner.Call(ctx, req) })
}

// failsafeLayer runs the inner service through a failsafe-go executor built
// once (failsafe.With(policies...)), passing the execution's context to the
// inner service so that a failsafe timeout reaches it. The executor's own
// context is context.Background(): giving it the caller's context per call
// would need Executor.WithContext, which copies the executor, so the peer is
// spared that cost.
func failsafeLayer(exec failsafe.Executor[Resp]) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		return failsafeService{exec: exec, inner: inner}
	})
}

type failsafeService struct {
	exec  failsafe.Executor[Resp]
	inner rampart.Service[Req, Resp]
}

func (s failsafeService) Call(_ context.Context, req Req) (Resp, error) {
	return s.exec.GetWithExecution(func(e failsafe.Execution[Resp]) (Resp, error) {
		return s.inner.Call(e.Context(), req)
	})
}

// hystrixLayer runs the inner service as the named afex/hystrix-go command,
// through hystrix.DoC with no fallback. hystrix-go always runs a command on
// its own goroutine, with a second goroutine and a timer enforcing the
// command's timeout; that cannot be switched off.
func hystrixLayer(name string) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		return hystrixService{name: name, inner: inner}
	})
}

type hystrixService struct {
	name  string
	inner rampart.Service[Req, Resp]
}

func (s hystrixService) Call(ctx context.Context, req Req) (Resp, error) {
	var resp Resp
	err := hystrix.DoC(ctx, s.name, func(ctx context.Context) error {
		var err error
		resp, err = s.inner.Call(ctx, req)
		return err
	}, nil)
	return resp, err
}

// resiliencyLayer guards the inner service with an eapache/go-resiliency
// breaker and, when r is not nil, retries through a go-resiliency retrier
// around it (go-resiliency has no retry budget).
func resiliencyLayer(r *retrier.Retrier, br *resbreaker.Breaker) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		return resiliencyService{retrier: r, breaker: br, inner: inner}
	})
}

type resiliencyService struct {
	retrier *retrier.Retrier
	breaker *resbreaker.Breaker
	inner   rampart.Service[Req, Resp]
}

func (s resiliencyService) Call(ctx context.Context, req Req) (Resp, error) {
	var resp Resp
	call := func() error {
		var err error
		resp, err = s.inner.Call(ctx, req)
		return err
	}
	if s.breaker != nil {
		guarded := call
		call = func() error { return s.breaker.Run(guarded) }
	}
	if s.retrier == nil {
		return resp, call()
	}
	err := s.retrier.RunCtx(ctx, func(context.Context) error { return call() })
	return resp, err
}

// hystrixCommand configures a fresh hystrix-go command for one benchmark
// run and returns its name. Commands are global in hystrix-go, so each run
// gets its own name.
func hystrixCommand(b *testing.B, cfg hystrix.CommandConfig) string {
	name := b.Name()
	hystrix.ConfigureCommand(name, cfg)
	return name
}

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
