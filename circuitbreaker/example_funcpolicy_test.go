package circuitbreaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
)

// ErrAuth is a fatal error: the credentials were refused, so no call will
// succeed until someone fixes them.
var ErrAuth = errors.New("credentials refused")

// A policy in a few lines: trip at once on a fatal error, and otherwise
// after five consecutive ordinary failures. The probe rule comes from
// Config.MaxProbes (one probe success closes the breaker).
func ExampleTripFunc() {
	policy := circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool {
		return errors.Is(c.LastError, ErrAuth) || c.ConsecutiveFailures >= 5
	})
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy: policy,
		// A fake clock, so that the rest of the cool-down printed below
		// is exact however slow the machine; leave Clock unset in use.
		Clock: clock.NewFake(time.Unix(0, 0), 0),
	})
	if err != nil {
		panic(err)
	}
	call := func(callErr error) {
		p, err := br.TryAcquire()
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
		p.Done(callErr)
	}

	for range 4 {
		call(errors.New("connection reset"))
	}
	fmt.Println("after 4 ordinary failures:", br.State().State)
	call(errors.New("connection reset"))
	fmt.Println("after 5:", br.State().State)

	br.Reset()
	call(fmt.Errorf("list buckets: %w", ErrAuth))
	fmt.Println("after one fatal error:", br.State().State)
	call(nil)
	// Output:
	// after 4 ordinary failures: closed
	// after 5: open
	// after one fatal error: open
	// refused: circuitbreaker: open (retry after 30s): tripped by: list buckets: credentials refused
}
