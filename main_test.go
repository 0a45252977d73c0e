package rampart_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test of the package, these stacks included,
// leaves a goroutine behind (TO3).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
