package loadshed_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/loadshed"
)

// A backend that refuses everything: after a few refusals the client
// starts refusing locally, taking load off the backend. Rand is fixed so
// the output is reproducible; leave it nil in real code.
func ExampleNewThrottleLayer() {
	throttle, err := loadshed.NewThrottle(loadshed.ThrottleConfig{Rand: func() float64 { return 0.7 }})
	if err != nil {
		panic(err)
	}
	layer, err := loadshed.NewThrottleLayer[string, string](throttle, nil)
	if err != nil {
		panic(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		return "", errors.New("backend: unavailable")
	}))
	for range 5 {
		p := throttle.Probability()
		_, err := svc.Call(context.Background(), "req")
		fmt.Printf("p=%.2f %v\n", p, err)
	}
	// Output:
	// p=0.00 backend: unavailable
	// p=0.50 backend: unavailable
	// p=0.67 backend: unavailable
	// p=0.75 loadshed: overloaded
	// p=0.80 loadshed: overloaded
}

// Shedding in front of a concurrency limit: instead of waiting for the only
// slot, a second concurrent call is refused at once.
func ExampleNewLayer() {
	lim, err := concurrency.New(1)
	if err != nil {
		panic(err)
	}
	shed, err := loadshed.NewLayer[string, string](loadshed.Config{Readiness: lim})
	if err != nil {
		panic(err)
	}
	wait, err := concurrency.NewLayer[string, string](concurrency.Config{Limiter: lim, Mode: concurrency.Wait})
	if err != nil {
		panic(err)
	}
	var svc rampart.Service[string, string]
	svc = rampart.NewBuilder[string, string]().Layer(shed).Layer(wait).Service(
		rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			if req == "outer" {
				_, err := svc.Call(ctx, "inner") // the only slot is taken
				fmt.Println("inner:", err)
			}
			return "done " + req, nil
		}))
	fmt.Println(svc.Call(context.Background(), "outer"))
	// Output:
	// inner: loadshed: overloaded
	// done outer <nil>
}
