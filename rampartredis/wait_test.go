package rampartredis_test

import (
	"testing"
	"time"

	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
)

// waitFor polls cond until it holds, failing the test after 10 seconds.
// Tests against a real redis-server cannot run on virtual time; they wait
// for an outcome, never for a duration.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func server(t testing.TB) *redistest.Server { return redistest.Start(t) }
