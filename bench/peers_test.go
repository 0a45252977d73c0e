package bench_test

import (
	"context"
	"testing"

	"github.com/afex/hystrix-go/hystrix"
	resbreaker "github.com/eapache/go-resiliency/breaker"
	"github.com/eapache/go-resiliency/retrier"
	"github.com/failsafe-go/failsafe-go"
	"github.com/rampart-go/rampart"
	"github.com/sony/gobreaker/v2"
)

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
