package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
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
