package ramparthttp_test

import (
	"testing"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/ramparthttp"
)

// TestStatusError_NZ1_NilStatusError calls every exported method of a nil
// *StatusError, which a caller holds after an errors.As that found none.
func TestStatusError_NZ1_NilStatusError(t *testing.T) {
	var e *ramparthttp.StatusError
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "StatusCode", Call: func() any { return e.StatusCode() }, Want: 0},
		{Name: "Error", Call: func() any { return e.Error() }, Want: "<nil>"},
		{Name: "Unwrap", Call: func() any { return e.Unwrap() }, Want: circuitbreaker.ErrBadResponse},
	})
}
