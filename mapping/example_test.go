package mapping_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/mapping"
)

// A service over ints, adapted to take and return strings.
func ExampleRequest() {
	square := rampart.ServiceFunc[int, int](func(ctx context.Context, n int) (int, error) {
		return n * n, nil
	})
	fromString, err := mapping.Request(square, func(ctx context.Context, s string) (int, error) {
		return strconv.Atoi(s)
	})
	if err != nil {
		panic(err)
	}
	svc, err := mapping.Response(fromString, func(n int) (string, error) {
		return "squared: " + strconv.Itoa(n), nil
	})
	if err != nil {
		panic(err)
	}
	for _, req := range []string{"12", "twelve"} {
		resp, err := svc.Call(context.Background(), req)
		fmt.Printf("%q %v\n", resp, err)
	}
	// Output:
	// "squared: 144" <nil>
	// "" strconv.Atoi: parsing "twelve": invalid syntax
}
