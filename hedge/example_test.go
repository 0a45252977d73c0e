package hedge_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/hedge"
)

// A replica that hangs is hedged after 10ms; the hedge answers, and the
// hanging attempt is cancelled before Call returns.
func ExampleNewLayer() {
	var attempts atomic.Int32
	replicas := rampart.ServiceFunc[*http.Request, string](func(ctx context.Context, req *http.Request) (string, error) {
		if attempts.Add(1) == 1 {
			<-ctx.Done() // the first replica hangs until cancelled
			fmt.Println("first attempt cancelled:", ctx.Err())
			return "", ctx.Err()
		}
		return "answer from the hedge", nil
	})

	// One retry budget bounds the hedges of every call: each request
	// deposits a fifth of a hedge, and a new budget starts with a floor of
	// ten hedges a second.
	hedges, err := budget.New(budget.Config{Ratio: 0.2})
	if err != nil {
		fmt.Println(err)
		return
	}
	layer, err := hedge.NewLayer(hedge.Config[*http.Request, string]{
		// Only GET and HEAD are safe to send twice.
		Hedgeable: func(req *http.Request) bool {
			return req.Method == http.MethodGet || req.Method == http.MethodHead
		},
		Budget:      hedges,
		MaxAttempts: 2,
		Delay:       10 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	svc := rampart.NewBuilder[*http.Request, string]().Layer(layer).Service(replicas)

	req, _ := http.NewRequest(http.MethodGet, "http://replica/item/1", nil)
	resp, err := svc.Call(context.Background(), req)
	fmt.Println(resp, err)
	fmt.Println("attempts:", attempts.Load())
	// Output:
	// first attempt cancelled: context canceled
	// answer from the hedge <nil>
	// attempts: 2
}

// A bad configuration is an error that names the field.
func ExampleNewLayer_badConfig() {
	_, err := hedge.NewLayer(hedge.Config[string, string]{
		Hedgeable: func(string) bool { return true },
		Budget:    new(budget.Budget),
		Quantile:  95,
	})
	fmt.Println(err)
	// Output:
	// hedge: Quantile must be 0 (a fixed Delay) or a fraction in (0, 1] (0.95 for p95), got 95
}
