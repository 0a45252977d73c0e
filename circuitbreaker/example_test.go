package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
)

// A breaker in a stack: after three failures the dependency is not called
// again until the cool-down ends.
func ExampleNewLayer() {
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 3},
		CoolDown: 10 * time.Second,
		// A clock that stands still, so that the rest of the cool-down
		// printed below is exact however long the example takes.
		Clock: clock.NewFake(time.Unix(0, 0), 0),
	})
	if err != nil {
		panic(err)
	}
	calls := 0
	registry := rampart.ServiceFunc[string, string](func(ctx context.Context, name string) (string, error) {
		calls++
		return "", errors.New("registry unavailable")
	})
	svc := rampart.NewBuilder[string, string]().
		Layer(circuitbreaker.NewLayer[string, string](br, nil)).
		Service(registry)

	for range 5 {
		_, err := svc.Call(context.Background(), "parser")
		fmt.Println(errors.Is(err, circuitbreaker.ErrOpen), err)
	}
	fmt.Println("registry called", calls, "times;", br.State().State)
	// Output:
	// false registry unavailable
	// false registry unavailable
	// false registry unavailable
	// true circuitbreaker: open (retry after 10s): tripped by: registry unavailable
	// true circuitbreaker: open (retry after 10s): tripped by: registry unavailable
	// registry called 3 times; open
}

// Driving a breaker by hand, for code that is not a rampart.Service.
func ExampleBreaker_TryAcquire() {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	if err != nil {
		panic(err)
	}
	lookup := func(fail bool) error {
		p, err := br.TryAcquire()
		if err != nil {
			return err // rejected: the call is not made
		}
		var callErr error
		if fail {
			callErr = errors.New("connection refused")
		}
		counted := p.Done(callErr) // classifies: nil is a success, errors fail
		fmt.Println("outcome counted:", counted)
		return callErr
	}

	fmt.Println(lookup(false))
	fmt.Println(lookup(true))
	err = lookup(false)
	var oe *circuitbreaker.OpenError
	if errors.As(err, &oe) {
		fmt.Println("refused; tripped by:", oe.Cause)
	}
	// Output:
	// outcome counted: true
	// <nil>
	// outcome counted: true
	// connection refused
	// refused; tripped by: connection refused
}

// Listeners see every transition, in order, after the breaker's lock is
// released; here the breaker uses no cool-down so the whole cycle runs at
// once.
func ExampleBreaker_Subscribe() {
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 1},
		CoolDown: circuitbreaker.Immediate,
	})
	if err != nil {
		panic(err)
	}
	unsubscribe := br.Subscribe(func(t circuitbreaker.Transition) {
		fmt.Printf("%v -> %v (cause: %v)\n", t.From, t.To, t.Cause)
	})
	defer unsubscribe()

	p, _ := br.TryAcquire()
	p.Failure(errors.New("connection refused"))
	p, _ = br.TryAcquire() // the cool-down is over: this call is a probe
	p.Success()
	// Output:
	// closed -> open (cause: connection refused)
	// open -> half-open (cause: <nil>)
	// half-open -> closed (cause: <nil>)
}

// A Switch lets an operator force breakers open for maintenance and release
// them afterwards; every change is a transition.
func ExampleSwitch() {
	var maintenance circuitbreaker.Switch
	br, err := circuitbreaker.New(circuitbreaker.Config{Switch: &maintenance})
	if err != nil {
		panic(err)
	}
	br.Subscribe(func(t circuitbreaker.Transition) { fmt.Println(t.From, "->", t.To) })

	maintenance.ForceOpen(errors.New("database migration"))
	_, err = br.TryAcquire()
	fmt.Println(err)
	maintenance.Release()
	_, err = br.TryAcquire()
	fmt.Println(err)
	// Output:
	// closed -> forced-open
	// circuitbreaker: forced open (until released): database migration
	// forced-open -> closed
	// <nil>
}

// One breaker per host: the bad host trips its own breaker, and traffic to
// the good host goes on. States lists every host's breaker for a status
// page.
func ExampleNewGroupLayer() {
	hosts, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
		Breaker: circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 2},
			CoolDown: 10 * time.Second,
		},
	})
	if err != nil {
		panic(err)
	}
	host := func(url string) string { h, _, _ := strings.Cut(url, "/"); return h }
	perHost, err := circuitbreaker.NewGroupLayer[string, string](hosts, host, nil)
	if err != nil {
		panic(err)
	}
	fetch := rampart.ServiceFunc[string, string](func(ctx context.Context, url string) (string, error) {
		if host(url) == "b.example" {
			return "", errors.New("connection refused")
		}
		return "200 OK", nil
	})
	svc := rampart.NewBuilder[string, string]().Layer(perHost).Service(fetch)

	for _, url := range []string{"a.example/1", "b.example/1", "b.example/2", "b.example/3", "a.example/2"} {
		resp, err := svc.Call(context.Background(), url)
		fmt.Println(url, resp, err)
	}
	for _, s := range hosts.States() {
		fmt.Println(s.Key, s.State)
	}
	// Output:
	// a.example/1 200 OK <nil>
	// b.example/1  connection refused
	// b.example/2  connection refused
	// b.example/3  circuitbreaker "b.example": open (retry after 10s): tripped by: connection refused
	// a.example/2 200 OK <nil>
	// a.example closed
	// b.example open
}

// A group without a stack: Run calls a plain function through the breaker
// of its tenant.
func ExampleGroup() {
	tenants, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
		Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}},
		MaxKeys: 1000,
	})
	if err != nil {
		panic(err)
	}
	query := func(tenant string) error {
		_, err := circuitbreaker.Run(context.Background(), tenants.Breaker(tenant), func(ctx context.Context) (int, error) {
			if tenant == "acme" {
				return 0, errors.New("shard offline")
			}
			return 42, nil
		})
		return err
	}

	fmt.Println(query("acme"))
	fmt.Println(errors.Is(query("acme"), circuitbreaker.ErrOpen))
	fmt.Println(query("globex"))
	// Output:
	// shard offline
	// true
	// <nil>
}

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
