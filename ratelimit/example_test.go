package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/ratelimit"
)

// A limiter allowing one call a second refuses the second call and says how
// long until a token is free.
func ExampleNewLayer() {
	lim := rate.NewLimiter(rate.Every(time.Second), 1)
	layer, err := ratelimit.NewLayer[string, string](ratelimit.Config{Limiter: lim, Mode: ratelimit.Refuse})
	if err != nil {
		panic(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		return "hello " + req, nil
	}))

	fmt.Println(svc.Call(context.Background(), "first"))
	_, err = svc.Call(context.Background(), "second")
	var le *ratelimit.LimitedError
	if errors.As(err, &le) {
		fmt.Println(errors.Is(err, ratelimit.ErrLimited), "retry after", le.RetryAfter().Round(time.Second))
	}
	// Output:
	// hello first <nil>
	// true retry after 1s
}

// Each user has a bucket of their own.
func ExampleNewKeyedLayer() {
	users, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 1, Burst: 1})
	if err != nil {
		panic(err)
	}
	layer, err := ratelimit.NewKeyedLayer[string, string](users, func(user string) string { return user }, ratelimit.Refuse)
	if err != nil {
		panic(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, user string) (string, error) {
		return "ok", nil
	}))
	for _, user := range []string{"alice", "bob", "alice"} {
		_, err := svc.Call(context.Background(), user)
		fmt.Println(user, errors.Is(err, ratelimit.ErrLimited))
	}
	// Output:
	// alice false
	// bob false
	// alice true
}
