package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/retry"
)

// A flaky service succeeds on its third call; the layer hides the first two
// failures.
func Example() {
	calls := 0
	flaky := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
		calls++
		if calls < 3 {
			return "", errors.New("connection reset")
		}
		return "hello " + req, nil
	})
	backoff, err := retry.NewExponential(retry.Exponential{Base: time.Millisecond, Max: 10 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	l, err := retry.NewLayer(retry.Config[string, string]{MaxAttempts: 3, Backoff: backoff})
	if err != nil {
		panic(err)
	}
	svc := l.Wrap(flaky)

	resp, err := svc.Call(context.Background(), "world")
	fmt.Println(resp, err, calls)
	// Output: hello world <nil> 3
}

// When every attempt fails, the error says how many attempts ran and why the
// loop stopped, and still matches the last failure.
func ExampleExhaustedError() {
	errDown := errors.New("connection refused")
	down := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		return "", errDown
	})
	backoff, _ := retry.NewConstant(time.Millisecond)
	l, _ := retry.NewLayer(retry.Config[string, string]{MaxAttempts: 2, Backoff: backoff})
	svc := l.Wrap(down)

	_, err := svc.Call(context.Background(), "ping")
	var ex *retry.ExhaustedError
	fmt.Println(errors.As(err, &ex), ex.Attempts)
	fmt.Println(errors.Is(err, errDown), errors.Is(err, retry.ErrMaxAttempts))
	fmt.Println(err)
	// Output:
	// true 2
	// true true
	// retry: gave up after 2 attempts (max attempts reached): connection refused
}

// A budget shared by every request caps retries at a share of the traffic.
// Here it is 10% with no floor, so a dead dependency receives 22 calls for
// 20 requests, where MaxAttempts alone would let through 60.
func ExampleNewLayer_budget() {
	b, err := budget.New(budget.Config{Ratio: 0.1, MinPerSecond: budget.NoFloor})
	if err != nil {
		panic(err)
	}
	calls := 0
	down := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		calls++
		return "", errors.New("connection refused")
	})
	backoff, _ := retry.NewConstant(0)
	layer, err := retry.NewLayer(retry.Config[string, string]{MaxAttempts: 3, Backoff: backoff, Budget: b})
	if err != nil {
		panic(err)
	}
	svc := rampart.NewBuilder[string, string]().Layer(layer).Service(down)

	budgetStops := 0
	for range 20 {
		_, err := svc.Call(context.Background(), "ping")
		if errors.Is(err, retry.ErrBudgetExhausted) {
			budgetStops++
		}
	}
	fmt.Println(calls, budgetStops)
	// Output: 22 20
}
