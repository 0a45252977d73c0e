package limit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/limit"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req, nil })
	l, err := limit.New(1)
	require.NoError(t, err)
	nilcheck.Run(t, 1, []nilcheck.Case[int, int]{
		{
			Name:  "nil Limiter",
			Build: func() (rampart.Service[int, int], error) { return limit.Wrap(ok, nil, limit.Wait) },
			Want:  "limit: limiter must not be nil",
		},
		{
			Name:  "zero Limiter",
			Build: func() (rampart.Service[int, int], error) { return limit.Wrap(ok, &limit.Limiter{}, limit.Wait) },
			Want:  "limit: limiter must be made by New, got a zero Limiter",
		},
		{
			Name:       "Wrap of nil service",
			Build:      func() (rampart.Service[int, int], error) { return limit.Wrap[int, int](nil, l, limit.Wait) },
			Want:       "limit: svc must not be nil: rampart: nil service",
			NilService: true,
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[int, int], error) {
				layer, err := limit.NewLayer[int, int](l, limit.Wait)
				require.NoError(t, err)
				return layer.Wrap(nil), nil
			},
			Want:       "limit: Wrap: rampart: nil service",
			NilService: true,
		},
	})
	assert.Zero(t, l.InFlight())
}

// The zero Limiter has no slots and is never ready.
func TestLimiter_ZeroValue(t *testing.T) {
	var l limit.Limiter
	assert.Zero(t, l.Max())
	assert.Zero(t, l.InFlight())
	assert.False(t, l.Ready())
}
