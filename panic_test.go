package rampart_test

import (
	"testing"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilcheck"
)

// TestPanicError_NZ1_NilPanicError calls every exported method of a nil
// *PanicError, which a caller holds after an errors.As that found none.
func TestPanicError_NZ1_NilPanicError(t *testing.T) {
	var e *rampart.PanicError
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Error", Call: func() any { return e.Error() }, Want: "<nil>"},
		{Name: "Unwrap", Call: func() any { return e.Unwrap() }, Want: nil},
	})
}
