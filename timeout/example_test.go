package timeout_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/timeout"
)

// A dependency that does not answer in time becomes an ordinary error that
// matches both timeout.ErrTimeout and context.DeadlineExceeded, so a circuit
// breaker outside counts it as a failure.
func ExampleNewLayer() {
	stuck := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		<-ctx.Done() // a well-behaved service stops when its context is done
		return "", ctx.Err()
	})
	layer, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: 10 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	svc := rampart.NewBuilder[string, string]().Layer(layer).Service(stuck)

	_, err = svc.Call(context.Background(), "ping")
	fmt.Println(err)
	fmt.Println(errors.Is(err, timeout.ErrTimeout), errors.Is(err, context.DeadlineExceeded))

	// The caller's own, earlier deadline is reported as the caller's.
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err = svc.Call(ctx, "ping")
	fmt.Println(err)
	fmt.Println(errors.Is(err, timeout.ErrTimeout), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// timeout: deadline of 10ms exceeded: context deadline exceeded
	// true true
	// context deadline exceeded
	// false true
}

// Per-request timeouts: For picks each request's timeout; 0 falls back to
// Timeout.
func ExampleNewLayer_perRequest() {
	layer, err := timeout.NewLayer(timeout.Config[string, string]{
		Timeout: 20 * time.Millisecond,
		For: func(req string) time.Duration {
			if req == "quick" {
				return 5 * time.Millisecond
			}
			return 0 // use Timeout
		},
	})
	if err != nil {
		panic(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))

	for _, req := range []string{"quick", "other"} {
		_, err := svc.Call(context.Background(), req)
		var te *timeout.Error
		if errors.As(err, &te) {
			fmt.Println(req, te.After)
		}
	}
	// Output:
	// quick 5ms
	// other 20ms
}
