package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// Run guards a plain function, without declaring a Service: here a lookup
// that fails twice trips the breaker, and the third call is not made.
func ExampleRun() {
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 2},
		CoolDown: 30 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	readPackage := func(name string) (string, error) {
		return circuitbreaker.Run(context.Background(), br, func(ctx context.Context) (string, error) {
			fmt.Println("fetching", name)
			return "", errors.New("registry HTTP 503")
		})
	}

	for range 3 {
		_, err := readPackage("parser")
		var oe *circuitbreaker.OpenError
		if errors.As(err, &oe) {
			fmt.Println("registry cooling down; retry after", oe.RetryAfter().Round(time.Second))
			continue
		}
		fmt.Println("registry request failed:", err)
	}
	// Output:
	// fetching parser
	// registry request failed: registry HTTP 503
	// fetching parser
	// registry request failed: registry HTTP 503
	// registry cooling down; retry after 30s
}
