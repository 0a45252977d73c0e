package concurrency_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
)

// One call holds the only slot; a second call in Refuse mode is refused
// instead of queueing.
func ExampleNewLayer() {
	lim, err := concurrency.New(1)
	if err != nil {
		panic(err)
	}
	layer, err := concurrency.NewLayer[string, string](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	if err != nil {
		panic(err)
	}
	var svc rampart.Service[string, string]
	svc = rampart.NewBuilder[string, string]().Layer(layer).Service(
		rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			fmt.Println("in flight:", lim.InFlight())
			// A nested call while this one holds the slot.
			_, err := svc.Call(ctx, "nested")
			fmt.Println("nested:", err, errors.Is(err, concurrency.ErrLimited))
			return "hello " + req, nil
		}))

	resp, err := svc.Call(context.Background(), "world")
	fmt.Println(resp, err, "in flight:", lim.InFlight())
	// Output:
	// in flight: 1
	// nested: concurrency: limit reached true
	// hello world <nil> in flight: 0
}

// A Limiter on its own, as semaphore.Weighted: at most two workers run at
// once, and TryAcquire tells a caller that would have to wait.
func ExampleLimiter() {
	lim, err := concurrency.New(2)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 2 {
		if err := lim.Acquire(ctx); err != nil {
			panic(err)
		}
	}
	fmt.Println("in flight:", lim.InFlight(), "third can start:", lim.TryAcquire())
	lim.Release()
	fmt.Println("in flight:", lim.InFlight(), "third can start:", lim.TryAcquire())
	lim.Release()
	lim.Release()
	// Output:
	// in flight: 2 third can start: false
	// in flight: 1 third can start: true
}

// An AdaptiveLimiter starts at its initial limit and moves it once per
// window from the latency of the calls; a Permit carries each call's start
// to Release.
func ExampleAdaptiveLimiter() {
	lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: 1, MaxLimit: 2, InitialLimit: 2})
	if err != nil {
		panic(err)
	}
	a, _ := lim.TryAcquire()
	b, _ := lim.TryAcquire()
	_, ok := lim.TryAcquire()
	fmt.Println("limit:", lim.Limit(), "in flight:", lim.InFlight(), "third can start:", ok)
	lim.Release(a)
	lim.Release(b)
	fmt.Println("in flight:", lim.InFlight(), "ready:", lim.Ready())

	l, err := concurrency.NewLayer[string, string](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	if err != nil {
		panic(err)
	}
	svc := l.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		return "hello " + req, nil
	}))
	fmt.Println(svc.Call(context.Background(), "world"))
	// Output:
	// limit: 2 in flight: 2 third can start: false
	// in flight: 0 ready: true
	// hello world <nil>
}
