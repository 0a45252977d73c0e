package rampart_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

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
