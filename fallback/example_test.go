package fallback_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/fallback"
)

// Recommendations degrade to a fixed list when the recommender fails.
func ExampleNewLayer() {
	layer, err := fallback.NewLayer(fallback.Config[string, []string]{
		Fallback: func(ctx context.Context, user string, err error) ([]string, error) {
			fmt.Println("recommender failed:", err)
			return []string{"bestseller"}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[string, []string](func(ctx context.Context, user string) ([]string, error) {
		return nil, errors.New("recommender: unavailable")
	}))
	fmt.Println(svc.Call(context.Background(), "alice"))
	// Output:
	// recommender failed: recommender: unavailable
	// [bestseller] <nil>
}
