package hedge_test

import (
	"testing"

	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/nilcheck"
)

// TestAllFailedError_NZ1_NilAllFailedError calls every exported method of
// a nil *AllFailedError, which a caller holds after an errors.As that
// found none.
func TestAllFailedError_NZ1_NilAllFailedError(t *testing.T) {
	var e *hedge.AllFailedError
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Error", Call: func() any { return e.Error() }, Want: "<nil>"},
		{Name: "Unwrap", Call: func() any { return e.Unwrap() }, Want: []error(nil)},
		{Name: "Timeout", Call: func() any { return e.Timeout() }, Want: false},
	})
}
