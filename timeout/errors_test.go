package timeout_test

import (
	"context"
	"testing"

	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/timeout"
)

// TestError_NZ1_NilError calls every exported method of a nil *Error,
// which a caller holds after an errors.As that found none.
func TestError_NZ1_NilError(t *testing.T) {
	var e *timeout.Error
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Error", Call: func() any { return e.Error() }, Want: "<nil>"},
		{Name: "Is", Call: func() any { return e.Is(context.DeadlineExceeded) }, Want: true},
		{Name: "Unwrap", Call: func() any { return e.Unwrap() }, Want: nil},
		{Name: "Timeout", Call: func() any { return e.Timeout() }, Want: true},
		{Name: "Temporary", Call: func() any { return e.Temporary() }, Want: true},
	})
}
