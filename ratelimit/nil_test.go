package ratelimit_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/wrap"
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
	nilcheck.Run(t, 1, []nilcheck.Case[int, int]{
		{
			Name: "nil limiter",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(echo(&calls.n), ratelimit.NewLayer, ratelimit.Config{Limiter: nil, Mode: ratelimit.Wait})
			},
			Want: "ratelimit: limiter must not be nil",
		},
		{
			Name: "zero limiter refuses",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(echo(&calls.n), ratelimit.NewLayer, ratelimit.Config{Limiter: &rate.Limiter{}, Mode: ratelimit.Wait})
			},
			Want: "ratelimit: limited: the limiter can never grant a token",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: rate.NewLimiter(1, 1), Mode: ratelimit.Wait})
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "ratelimit: Wrap: rampart: nil service",
			NilService: true,
		},
		{
			Name: "WrapKeyed with nil key",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service3(echo(&calls.n), ratelimit.NewKeyedLayer, keyed(), nil, ratelimit.Wait)
			},
			Want: "ratelimit: key must not be nil",
		},
		{
			Name: "keyed layer wraps nil service",
			Build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](keyed(), key, ratelimit.Wait)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "ratelimit: Wrap: rampart: nil service",
			NilService: true,
		},
		{
			Name: "nil Keyed",
			Build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](nil, key, ratelimit.Wait)
				return wrapIfOK(l, err, echo(&calls.n))
			},
			Want: "ratelimit: keyed limiter must not be nil",
		},
		{
			Name: "zero Keyed",
			Build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](&ratelimit.Keyed{}, key, ratelimit.Wait)
				return wrapIfOK(l, err, echo(&calls.n))
			},
			Want: "ratelimit: keyed limiter must be made by NewKeyed, got a zero Keyed",
		},
		{
			Name: "nil key",
			Build: func() (rampart.Service[int, int], error) {
				l, err := ratelimit.NewKeyedLayer[int, int](keyed(), nil, ratelimit.Wait)
				return wrapIfOK(l, err, echo(&calls.n))
			},
			Want: "ratelimit: key must not be nil",
		},
	})
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
