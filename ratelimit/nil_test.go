package ratelimit_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/ratelimit"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	var calls struct{ n atomic.Int64 }
	keyed := func() *ratelimit.Keyed {
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 1})
		require.NoError(t, err)
		return k
	}
	key := func(int) string { return "k" }
	for _, tc := range []struct {
		name       string
		build      func() (rampart.Service[int, int], error)
		want       string
		nilService bool
	}{
		{
			name:  "nil limiter",
			build: func() (rampart.Service[int, int], error) { return ratelimit.Wrap(echo(&calls.n), nil, ratelimit.Wait) },
			want:  "ratelimit: limiter must not be nil",
		},
		{
			name: "zero limiter refuses",
			build: func() (rampart.Service[int, int], error) {
				return ratelimit.Wrap(echo(&calls.n), &rate.Limiter{}, ratelimit.Wait)
			},
			want: "ratelimit: limited: the limiter can never grant a token",
		},
		{
			name: "Wrap of nil service",
			build: func() (rampart.Service[int, int], error) {
				return ratelimit.Wrap[int, int](nil, rate.NewLimiter(1, 1), ratelimit.Wait)
			},
			want:       "ratelimit: svc must not be nil: rampart: nil service",
			nilService: true,
		},
		{
			name: "layer wraps nil service",
			build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewLayer[int, int](rate.NewLimiter(1, 1), ratelimit.Wait)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			want:       "ratelimit: Wrap: rampart: nil service",
			nilService: true,
		},
		{
			name: "keyed layer wraps nil service",
			build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](keyed(), key, ratelimit.Wait)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			want:       "ratelimit: Wrap: rampart: nil service",
			nilService: true,
		},
		{
			name: "nil Keyed",
			build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](nil, key, ratelimit.Wait)
				return wrapIfOK(l, err, echo(&calls.n))
			},
			want: "ratelimit: keyed limiter must not be nil",
		},
		{
			name: "zero Keyed",
			build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](&ratelimit.Keyed{}, key, ratelimit.Wait)
				return wrapIfOK(l, err, echo(&calls.n))
			},
			want: "ratelimit: keyed limiter must be made by NewKeyed, got a zero Keyed",
		},
		{
			name: "nil key",
			build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](keyed(), nil, ratelimit.Wait)
				return wrapIfOK(l, err, echo(&calls.n))
			},
			want: "ratelimit: key must not be nil",
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
	assert.Zero(t, calls.n.Load())
}

// The zero Keyed holds no keys and grants no tokens.
func TestKeyed_ZeroValue(t *testing.T) {
	var k ratelimit.Keyed
	assert.Zero(t, k.Len())
	lim := k.Limiter("a")
	assert.False(t, lim.Allow())
	assert.Zero(t, k.Len())
}

func wrapIfOK(l rampart.Layer[int, int], err error, svc rampart.Service[int, int]) (rampart.Service[int, int], error) {
	if err != nil {
		return nil, err
	}
	return l.Wrap(svc), nil
}
