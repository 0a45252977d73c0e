package rampart_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// tag returns a layer that prints when a request enters and leaves it.
func tag(name string) rampart.Layer[string, string] {
	return rampart.LayerFunc[string, string](func(inner rampart.Service[string, string]) rampart.Service[string, string] {
		return rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			fmt.Println("enter", name)
			resp, err := inner.Call(ctx, req)
			fmt.Println("leave", name)
			return resp, err
		})
	})
}

// The first layer added is the outermost: it sees the request first and the
// response last.
func ExampleBuilder() {
	backend := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		fmt.Println("service", req)
		return "pong", nil
	})

	svc := rampart.NewBuilder[string, string]().
		Layer(tag("a")).
		Layer(tag("b")).
		Service(backend)

	resp, err := svc.Call(context.Background(), "ping")
	fmt.Println(resp, err)
	// Output:
	// enter a
	// enter b
	// service ping
	// leave b
	// leave a
	// pong <nil>
}

// A full stack in a few lines: With takes each constructor's layer and
// error, and Build returns the first error, naming the layer by position
// and keeping the constructor's own error, which names the bad field.
func ExampleBuilder_Build() {
	backend := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		return "hello " + req, nil
	})
	var br circuitbreaker.Breaker // the zero Breaker has the default settings

	svc, err := rampart.NewBuilder[string, string]().
		With(retry.NewLayer(retry.Config[string, string]{MaxAttempts: 3, Budget: new(budget.Budget)})).
		Layer(circuitbreaker.NewLayer[string, string](&br, nil)).
		With(timeout.NewLayer(timeout.Config[string, string]{Timeout: time.Second})).
		Build(backend)
	if err != nil {
		panic(err)
	}
	fmt.Println(svc.Call(context.Background(), "world"))

	// A bad value is reported by Build, not by a call.
	_, err = rampart.NewBuilder[string, string]().
		With(retry.NewLayer(retry.Config[string, string]{MaxAttempts: 3})).
		Layer(circuitbreaker.NewLayer[string, string](&br, nil)).
		With(timeout.NewLayer(timeout.Config[string, string]{Timeout: -time.Second})).
		Build(backend)
	fmt.Println(err)
	// Output:
	// hello world <nil>
	// rampart: layer 2: timeout: Timeout must be > 0, got -1s
}

// A plain function through a stack: the request is the function, and
// Invoke is the service that calls it. The retry layer calls it again for
// each attempt.
func ExampleInvoke() {
	backoff, err := retry.NewConstant(time.Millisecond)
	if err != nil {
		panic(err)
	}
	svc, err := rampart.NewBuilder[rampart.Func[int], int]().
		With(retry.NewLayer(retry.Config[rampart.Func[int], int]{Backoff: backoff})).
		With(timeout.NewLayer(timeout.Config[rampart.Func[int], int]{Timeout: time.Second})).
		Build(rampart.Invoke[int]())
	if err != nil {
		panic(err)
	}

	attempts := 0
	n, err := svc.Call(context.Background(), func(ctx context.Context) (int, error) {
		attempts++
		if attempts < 2 {
			return 0, errors.New("connection reset")
		}
		return 42, nil
	})
	fmt.Println(n, err, "after", attempts, "attempts")
	// Output:
	// 42 <nil> after 2 attempts
}

// The recommended order for a client of a remote dependency: a total
// timeout around everything, retries inside it, the breaker consulted
// before each attempt, and a timeout per attempt. When the breaker trips,
// the retry loop stops at once and the caller gets the breaker's refusal
// itself, not a retries-exhausted error.
func ExampleBuilder_resilientStack() {
	breaker, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 2},
		CoolDown: time.Minute,
	})
	if err != nil {
		panic(err)
	}
	backoff, err := retry.NewConstant(time.Millisecond)
	if err != nil {
		panic(err)
	}

	calls := 0
	backend := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		calls++
		fmt.Println("attempt", calls)
		return "", errors.New("connection refused")
	})

	svc, err := rampart.NewBuilder[string, string]().
		With(timeout.NewLayer(timeout.Config[string, string]{Timeout: 2 * time.Second})).        // bounds the whole request, retries included
		With(retry.NewLayer(retry.Config[string, string]{MaxAttempts: 5, Backoff: backoff})).    // up to 5 attempts
		Layer(circuitbreaker.NewLayer[string, string](breaker, nil)).                            // the breaker, consulted before each attempt
		With(timeout.NewLayer(timeout.Config[string, string]{Timeout: 100 * time.Millisecond})). // a timed-out attempt is a breaker failure
		Build(backend)
	if err != nil {
		panic(err)
	}

	_, err = svc.Call(context.Background(), "GET /")
	var open *circuitbreaker.OpenError
	fmt.Println("breaker open:", errors.As(err, &open))
	fmt.Println("retries exhausted:", errors.Is(err, retry.ErrExhausted))
	fmt.Println("tripped by:", open.Cause)

	_, err = svc.Call(context.Background(), "GET /")
	fmt.Println("next request refused:", errors.Is(err, circuitbreaker.ErrOpen), "calls:", calls)
	// Output:
	// attempt 1
	// attempt 2
	// breaker open: true
	// retries exhausted: false
	// tripped by: connection refused
	// next request refused: true calls: 2
}
