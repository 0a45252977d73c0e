package ctxcheck_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/ctxcheck"
)

type skipper struct {
	rampart.Service[int, int]
	unchecked rampart.Service[int, int]
}

func (s skipper) Unchecked() rampart.Service[int, int] { return s.unchecked }

func TestUnchecked(t *testing.T) {
	plain := rampart.ServiceFunc[int, int](func(_ context.Context, n int) (int, error) { return n, nil })
	twin := rampart.ServiceFunc[int, int](func(_ context.Context, n int) (int, error) { return -n, nil })

	got := ctxcheck.Unchecked[int, int](plain)
	n, err := got.Call(context.Background(), 1)
	assert.NoError(t, err)
	assert.Equal(t, 1, n, "a service with no check to skip is its own unchecked service")

	got = ctxcheck.Unchecked[int, int](skipper{Service: plain, unchecked: twin})
	n, err = got.Call(context.Background(), 1)
	assert.NoError(t, err)
	assert.Equal(t, -1, n, "a Skipper gives its unchecked service")
}
