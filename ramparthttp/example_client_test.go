package ramparthttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
)

// An http.Client whose transport retries within limits, guards the backend
// with a circuit breaker and bounds each attempt with a timeout.
func ExampleNewTransport() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()

	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 3},
		CoolDown: 30 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	backoff, _ := retry.NewConstant(0)
	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
		Breaker:        br,
		AttemptTimeout: 2 * time.Second,
		Retry:          ramparthttp.RetryConfig{MaxAttempts: 2, Backoff: backoff},
	})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: tr}

	for i := 1; i <= 3; i++ {
		resp, err := client.Get(down.URL)
		switch {
		case errors.Is(err, circuitbreaker.ErrOpen):
			fmt.Printf("call %d: failed fast, breaker %v\n", i, br.State().State)
		case err != nil:
			fmt.Printf("call %d: %v\n", i, err)
		default:
			resp.Body.Close()
			fmt.Printf("call %d: %s\n", i, resp.Status)
		}
	}
	// Output:
	// call 1: 503 Service Unavailable
	// call 2: failed fast, breaker open
	// call 3: failed fast, breaker open
}
