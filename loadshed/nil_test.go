package loadshed_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/limit"
	"github.com/rampart-go/rampart/loadshed"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req, nil })
	ready := loadshed.ReadyFunc(func() bool { return true })
	th, err := loadshed.NewThrottle(loadshed.ThrottleConfig{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name       string
		build      func() (rampart.Service[int, int], error)
		want       string
		nilService bool
	}{
		{
			name:  "nil Readiness",
			build: func() (rampart.Service[int, int], error) { return loadshed.Wrap(ok, nil) },
			want:  "loadshed: readiness must not be nil",
		},
		{
			name:  "nil ReadyFunc",
			build: func() (rampart.Service[int, int], error) { return loadshed.Wrap(ok, loadshed.ReadyFunc(nil)) },
			want:  "loadshed: readiness must not be a nil loadshed.ReadyFunc",
		},
		{
			name:  "zero *limit.Limiter is never ready",
			build: func() (rampart.Service[int, int], error) { return loadshed.Wrap(ok, &limit.Limiter{}) },
			want:  "loadshed: overloaded",
		},
		{
			name:       "Wrap of nil service",
			build:      func() (rampart.Service[int, int], error) { return loadshed.Wrap[int, int](nil, ready) },
			want:       "loadshed: svc must not be nil: rampart: nil service",
			nilService: true,
		},
		{
			name: "layer wraps nil service",
			build: func() (rampart.Service[int, int], error) {
				l, err := loadshed.NewLayer[int, int](ready)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			want:       "loadshed: Wrap: rampart: nil service",
			nilService: true,
		},
		{
			name: "nil Throttle",
			build: func() (rampart.Service[int, int], error) {
				_, err := loadshed.NewThrottleLayer[int, int](nil, nil)
				return nil, err
			},
			want: "loadshed: throttle must not be nil",
		},
		{
			name: "zero Throttle",
			build: func() (rampart.Service[int, int], error) {
				_, err := loadshed.NewThrottleLayer[int, int](&loadshed.Throttle{}, nil)
				return nil, err
			},
			want: "loadshed: throttle must be made by NewThrottle, got a zero Throttle",
		},
		{
			name: "throttle layer wraps nil service",
			build: func() (rampart.Service[int, int], error) {
				l, err := loadshed.NewThrottleLayer[int, int](th, nil)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			want:       "loadshed: Wrap: rampart: nil service",
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
