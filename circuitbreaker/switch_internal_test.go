package circuitbreaker

import (
	"runtime"
	"testing"
)

// A Switch that is never flipped must not keep a pointer for every breaker
// ever attached to it.
func TestSwitch_CB12_ForgetsCollectedBreakers(t *testing.T) {
	var sw Switch
	for range 10_000 {
		if _, err := New(Config{Switch: &sw}); err != nil {
			t.Fatal(err)
		}
		if len(sw.breakers)%1024 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	if _, err := New(Config{Switch: &sw}); err != nil {
		t.Fatal(err)
	}
	sw.mu.Lock()
	n := len(sw.breakers)
	sw.mu.Unlock()
	if n > 2048 {
		t.Fatalf("switch holds %d pointers for 10,001 attached breakers that are gone", n)
	}
}
