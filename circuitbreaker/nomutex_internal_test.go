package circuitbreaker

import (
	"context"
	"testing"

	"github.com/rampart-go/rampart"
)

// TestClosedPathTakesNoMutex holds the breaker's mutex while calls go
// through a Closed breaker, directly and through the layer: were the success
// path to take the lock, the test would deadlock and time out instead of
// finishing. It is a white-box test because only the package can hold mu.
func TestClosedPathTakesNoMutex(t *testing.T) {
	b, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	svc := NewLayer[int, int](b).Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 1, nil }))

	b.mu.Lock()
	defer b.mu.Unlock()
	for range 1000 {
		p, err := b.TryAcquire()
		if err != nil {
			t.Fatalf("TryAcquire: %v", err)
		}
		if !p.Success() {
			t.Fatal("a Closed success did not count")
		}
		if _, err := svc.Call(context.Background(), 0); err != nil {
			t.Fatalf("Call: %v", err)
		}
	}
}
