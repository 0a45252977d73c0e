package circuitbreaker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
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
	svc := NewLayer[int, int](b, nil).Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 1, nil }))

	b.mu.Lock()
	defer b.mu.Unlock()
	for range 1000 {
		succeedOnce(t, b)
		if _, err := svc.Call(context.Background(), 0); err != nil {
			t.Fatalf("Call: %v", err)
		}
	}
}

// succeedOnce makes one successful call through b by hand.
func succeedOnce(t *testing.T, b *Breaker) {
	t.Helper()
	p, err := b.TryAcquire()
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	if !p.Success() {
		t.Fatal("a Closed success did not count")
	}
}

// A success in a time window, once the window's timer runs, takes no
// mutex either (no time passes here after the first success, so no bucket
// boundary comes near), and counts.
func TestTimeWindowSuccessTakesNoMutex(t *testing.T) {
	clk := &handClock{}
	b, err := New(Config{Clock: clk, Policy: FailureRate{Window: Window{Period: 10 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	clk.mono.Store(int64(500 * time.Millisecond)) // mid-bucket
	p, _ := b.TryAcquire()
	p.Success() // starts the window's timer, under the lock
	b.mu.Lock()
	for range 1000 {
		succeedOnce(t, b)
	}
	b.mu.Unlock()
	if got := b.State().Counts.Calls; got != 1001 {
		t.Errorf("%d calls in the window, want 1001", got)
	}
}

// handClock is a clock.Clock whose time the test sets; its timers never
// fire.
type handClock struct{ mono atomic.Int64 }

func (c *handClock) Now() time.Time                            { return time.Unix(0, c.mono.Load()) }
func (c *handClock) Monotonic() time.Duration                  { return time.Duration(c.mono.Load()) }
func (*handClock) AfterFunc(time.Duration, func()) clock.Timer { return stillTimer{} }

type stillTimer struct{}

func (stillTimer) Stop() bool { return true }

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
