package concurrency_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/wrap"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req, nil })
	l, err := concurrency.New(1)
	require.NoError(t, err)
	nilcheck.Run(t, 1, []nilcheck.Case[int, int]{
		{
			Name: "nil Limiter",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(ok, concurrency.NewLayer, concurrency.Config{Limiter: nil, Mode: concurrency.Wait})
			},
			Want: "concurrency: limiter must not be nil",
		},
		{
			Name: "zero Limiter",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(ok, concurrency.NewLayer, concurrency.Config{Limiter: &concurrency.Limiter{}, Mode: concurrency.Wait})
			},
			Want: "concurrency: limiter must be made by New, got a zero Limiter",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[int, int], error) {
				layer, err := concurrency.NewLayer[int, int](concurrency.Config{Limiter: l, Mode: concurrency.Wait})
				require.NoError(t, err)
				return layer.Wrap(nil), nil
			},
			Want:       "concurrency: Wrap: rampart: nil service",
			NilService: true,
		},
	})
	assert.Zero(t, l.InFlight())
}

// The zero Limiter has no slots and is never ready: Acquire refuses at
// once, saying no slot will ever free; TryAcquire fails; Release is
// ignored. None panics.
func TestLimiter_LM4_ZeroValue(t *testing.T) {
	var l concurrency.Limiter
	assert.Zero(t, l.Max())
	assert.Zero(t, l.InFlight())
	assert.False(t, l.Ready())

	err := l.Acquire(t.Context())
	require.ErrorIs(t, err, concurrency.ErrLimited)
	var le *concurrency.LimitedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, time.Duration(math.MaxInt64), le.RetryAfter())
	assert.EqualError(t, err, "concurrency: limit reached: the limiter has no slots (a zero Limiter or AdaptiveLimiter; make one with New or NewAdaptive)")
	assert.False(t, l.TryAcquire())
	l.Release()
	assert.Zero(t, l.InFlight())
}
