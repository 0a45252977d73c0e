package limit_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/limit"
)

// One call holds the only slot; a second call in Reject mode is refused
// instead of queueing.
func ExampleNewLayer() {
	lim, err := limit.New(1)
	if err != nil {
		panic(err)
	}
	layer, err := limit.NewLayer[string, string](lim, limit.Reject)
	if err != nil {
		panic(err)
	}
	var svc rampart.Service[string, string]
	svc = rampart.NewBuilder[string, string]().Layer(layer).Service(
		rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			fmt.Println("in flight:", lim.InFlight())
			// A nested call while this one holds the slot.
			_, err := svc.Call(ctx, "nested")
			fmt.Println("nested:", err, errors.Is(err, limit.ErrLimited))
			return "hello " + req, nil
		}))

	resp, err := svc.Call(context.Background(), "world")
	fmt.Println(resp, err, "in flight:", lim.InFlight())
	// Output:
	// in flight: 1
	// nested: limit: concurrency limit reached (1 in flight) true
	// hello world <nil> in flight: 0
}
