package ratelimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/ratelimit"
)

// A refusal has the shape of concurrency's: RetryAfter, PastDeadline and
// RetryAfter.
func TestLimitedError_LM5_SameShapeAsConcurrency(t *testing.T) {
	r := ratelimit.LimitedError{Wait: time.Second, PastDeadline: true}
	c := concurrency.LimitedError(r)
	assert.Equal(t, r.RetryAfter(), c.RetryAfter())
}

// TestLimitedError_NZ1_NilLimitedError calls every exported method of a
// nil *LimitedError, which a caller holds after an errors.As that found
// none.
func TestLimitedError_NZ1_NilLimitedError(t *testing.T) {
	var e *ratelimit.LimitedError
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Error", Call: func() any { return e.Error() }, Want: "<nil>"},
		{Name: "RetryAfter", Call: func() any { return e.RetryAfter() }, Want: time.Duration(0)},
		{Name: "Is", Call: func() any { return e.Is(ratelimit.ErrLimited) }, Want: true},
	})
}
