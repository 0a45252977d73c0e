package filter_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/filter"
)

// Empty queries never reach the search backend.
func ExampleNewLayer() {
	layer, err := filter.NewLayer[string, string](func(ctx context.Context, query string) error {
		if query == "" {
			return filter.ErrRefused
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, query string) (string, error) {
		return "results for " + query, nil
	}))
	fmt.Println(svc.Call(context.Background(), "gophers"))
	_, err = svc.Call(context.Background(), "")
	fmt.Println(err, errors.Is(err, filter.ErrRefused))
	// Output:
	// results for gophers <nil>
	// filter: refused true
}
