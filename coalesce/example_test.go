package coalesce_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/coalesce"
)

// waiting is a context that reports when a caller starts waiting on it, so
// that this example can release the backend only after every caller has
// joined the call in flight. Real code does not need it.
type waiting struct {
	context.Context
	joined *sync.WaitGroup
	once   sync.Once
}

func (c *waiting) Done() <-chan struct{} {
	c.once.Do(c.joined.Done)
	return c.Context.Done()
}

// Three callers ask for the same user at once; the backend is called once
// and every caller gets its answer.
func ExampleNewLayer() {
	var backendCalls atomic.Int64
	release := make(chan struct{})
	layer, err := coalesce.NewLayer[string, string](coalesce.Config[string]{Key: func(user string) string { return user }})
	if err != nil {
		panic(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, user string) (string, error) {
		backendCalls.Add(1)
		<-release
		return "profile of " + user, nil
	}))

	var joined, done sync.WaitGroup
	answers := make([]string, 3)
	for i := range answers {
		joined.Add(1)
		ctx := &waiting{Context: context.Background(), joined: &joined}
		done.Go(func() { answers[i], _ = svc.Call(ctx, "alice") })
	}
	joined.Wait()
	close(release)
	done.Wait()
	fmt.Printf("%q\nbackend calls: %d\n", answers, backendCalls.Load())
	// Output:
	// ["profile of alice" "profile of alice" "profile of alice"]
	// backend calls: 1
}
