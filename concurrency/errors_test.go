package concurrency_test

import (
	"testing"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilcheck"
)

// TestLimitedError_NZ1_NilLimitedError calls every exported method of a
// nil *LimitedError, which a caller holds after an errors.As that found
// none.
func TestLimitedError_NZ1_NilLimitedError(t *testing.T) {
	var e *concurrency.LimitedError
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Error", Call: func() any { return e.Error() }, Want: "<nil>"},
		{Name: "RetryAfter", Call: func() any { return e.RetryAfter() }, Want: time.Duration(0)},
		{Name: "Is", Call: func() any { return e.Is(rampart.ErrRefused) }, Want: true},
	})
}
