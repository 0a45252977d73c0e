package circuitbreaker

import (
	"context"
	"testing"
	"unsafe"

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

// The structs every Closed call reads fill whole cache lines, so that no
// object written by another goroutine can share a line with them (no
// false sharing): the layer's service is one 64-byte object (the
// allocator aligns those to 64 bytes).
func TestHotStructsFillCacheLines(t *testing.T) {
	if got := unsafe.Sizeof(service[int, int]{}); got != cacheLine {
		t.Errorf("layer service: %d bytes, want %d", got, cacheLine)
	}
	if got := unsafe.Sizeof(service[[64]byte, string]{}); got != cacheLine {
		t.Errorf("layer service with large types: %d bytes, want %d", got, cacheLine)
	}
	if got := unsafe.Sizeof(groupService[int, int, string]{}); got != cacheLine {
		t.Errorf("group layer service: %d bytes, want %d", got, cacheLine)
	}
}
