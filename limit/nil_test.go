package limit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/limit"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req, nil })
	l, err := limit.New(1)
	require.NoError(t, err)
	for _, tc := range []struct {
		name       string
		build      func() (rampart.Service[int, int], error)
		want       string
		nilService bool
	}{
		{
			name:  "nil Limiter",
			build: func() (rampart.Service[int, int], error) { return limit.Wrap(ok, nil, limit.Wait) },
			want:  "limit: limiter must not be nil",
		},
		{
			name:  "zero Limiter",
			build: func() (rampart.Service[int, int], error) { return limit.Wrap(ok, &limit.Limiter{}, limit.Wait) },
			want:  "limit: limiter must be made by New, got a zero Limiter",
		},
		{
			name:       "Wrap of nil service",
			build:      func() (rampart.Service[int, int], error) { return limit.Wrap[int, int](nil, l, limit.Wait) },
			want:       "limit: svc must not be nil: rampart: nil service",
			nilService: true,
		},
		{
			name: "layer wraps nil service",
			build: func() (rampart.Service[int, int], error) {
				layer, err := limit.NewLayer[int, int](l, limit.Wait)
				require.NoError(t, err)
				return layer.Wrap(nil), nil
			},
			want:       "limit: Wrap: rampart: nil service",
			nilService: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := tc.build()
			if err == nil {
				require.NotNil(t, svc)
				_, err = svc.Call(t.Context(), 1)
			}
			assert.EqualError(t, err, tc.want)
			if tc.nilService {
				assert.ErrorIs(t, err, rampart.ErrNilService)
			}
		})
	}
	assert.Zero(t, l.InFlight())
}

// The zero Limiter has no slots and is never ready.
func TestLimiter_ZeroValue(t *testing.T) {
	var l limit.Limiter
	assert.Zero(t, l.Max())
	assert.Zero(t, l.InFlight())
	assert.False(t, l.Ready())
}
