package ratelimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/ratelimit"
)

// A refusal has the shape of concurrency's: RetryAfter, PastDeadline and
// RetryAfter.
func TestLimitedError_LM5_SameShapeAsConcurrency(t *testing.T) {
	r := ratelimit.LimitedError{Wait: time.Second, PastDeadline: true}
	c := concurrency.LimitedError(r)
	assert.Equal(t, r.RetryAfter(), c.RetryAfter())
}
