package ramparthttp_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// client stack hands contexts to response bodies and retries with timers,
// and the server side must start none per request.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
