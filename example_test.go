package rampart_test

import (
	"context"
	"fmt"

	"github.com/rampart-go/rampart"
)

// tag returns a layer that prints when a request enters and leaves it.
func tag(name string) rampart.Layer[string, string] {
	return rampart.LayerFunc[string, string](func(inner rampart.Service[string, string]) rampart.Service[string, string] {
		return rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			fmt.Println("enter", name)
			resp, err := inner.Call(ctx, req)
			fmt.Println("leave", name)
			return resp, err
		})
	})
}

// The first layer added is the outermost: it sees the request first and the
// response last.
func ExampleBuilder() {
	backend := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		fmt.Println("service", req)
		return "pong", nil
	})

	svc := rampart.NewBuilder[string, string]().
		Layer(tag("a")).
		Layer(tag("b")).
		Service(backend)

	resp, err := svc.Call(context.Background(), "ping")
	fmt.Println(resp, err)
	// Output:
	// enter a
	// enter b
	// service ping
	// leave b
	// leave a
	// pong <nil>
}
