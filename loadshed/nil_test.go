package loadshed_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/loadshed"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req, nil })
	ready := loadshed.ReadyFunc(func() bool { return true })
	th, err := loadshed.NewThrottle(loadshed.ThrottleConfig{})
	require.NoError(t, err)
	nilcheck.Run(t, 1, []nilcheck.Case[int, int]{
		{
			Name: "nil Readiness",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(ok, loadshed.NewLayer, loadshed.Config{Readiness: nil})
			},
			Want: "loadshed: readiness must not be nil",
		},
		{
			Name: "nil ReadyFunc",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(ok, loadshed.NewLayer, loadshed.Config{Readiness: loadshed.ReadyFunc(nil)})
			},
			Want: "loadshed: readiness must not be a nil loadshed.ReadyFunc",
		},
		{
			Name: "zero *concurrency.Limiter is never ready",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service(ok, loadshed.NewLayer, loadshed.Config{Readiness: &concurrency.Limiter{}})
			},
			Want: "loadshed: overloaded",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[int, int], error) {
				l, err := loadshed.NewLayer[int, int](loadshed.Config{Readiness: ready})
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "loadshed: Wrap: rampart: nil service",
			NilService: true,
		},
		{
			Name: "nil Throttle",
			Build: func() (rampart.Service[int, int], error) {
				_, err := loadshed.NewThrottleLayer[int, int](nil, nil)
				return nil, err
			},
			Want: "loadshed: throttle must not be nil",
		},
		{
			Name: "zero Throttle",
			Build: func() (rampart.Service[int, int], error) {
				_, err := loadshed.NewThrottleLayer[int, int](&loadshed.Throttle{}, nil)
				return nil, err
			},
			Want: "loadshed: throttle must be made by NewThrottle, got a zero Throttle",
		},
		{
			Name: "WrapThrottle with nil Throttle",
			Build: func() (rampart.Service[int, int], error) {
				return wrap.Service2(ok, loadshed.NewThrottleLayer, nil, nil)
			},
			Want: "loadshed: throttle must not be nil",
		},
		{
			Name: "throttle layer wraps nil service",
			Build: func() (rampart.Service[int, int], error) {
				l, err := loadshed.NewThrottleLayer[int, int](th, nil)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "loadshed: Wrap: rampart: nil service",
			NilService: true,
		},
	})
	requests, _ := th.Counts()
	assert.Zero(t, requests, "a failing wrap counts nothing")
}

// The zero Throttle has no window: it never refuses and counts nothing.
func TestThrottle_ZeroValue(t *testing.T) {
	var th loadshed.Throttle
	th.Record(false)
	assert.True(t, th.Allow())
	assert.Zero(t, th.Probability())
	requests, accepts := th.Counts()
	assert.Zero(t, requests)
	assert.Zero(t, accepts)
}
