package loadshed_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewLayer_RejectsNilReadiness(t *testing.T) {
	_, err := loadshed.NewLayer[int, int](loadshed.Config{Readiness: nil})
	assert.EqualError(t, err, "loadshed: readiness must not be nil")
}

// The Tower load_shed scenario: a concurrency limit that would make the
// call wait is full, so the call is refused at once instead of queueing.
func TestLayer_ShedsInsteadOfQueueing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.New(1)
		require.NoError(t, err)
		shed, err := loadshed.NewLayer[int, int](loadshed.Config{Readiness: lim})
		require.NoError(t, err)
		wait, err := concurrency.NewLayer[int, int](concurrency.Config{Limiter: lim, Mode: concurrency.Wait})
		require.NoError(t, err)
		release := make(chan struct{})
		var calls atomic.Int64
		svc := rampart.NewBuilder[int, int]().Layer(shed).Layer(wait).Service(
			rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
				calls.Add(1)
				<-release
				return req + 1, nil
			}))

		go func() { _, _ = svc.Call(t.Context(), 1) }()
		synctest.Wait()

		resp, err := svc.Call(t.Context(), 2)
		assert.Zero(t, resp)
		assert.Same(t, loadshed.ErrOverloaded, err)
		assert.EqualError(t, err, "loadshed: overloaded")
		assert.Equal(t, int64(1), calls.Load(), "a shed call must not reach the inner service")

		release <- struct{}{}
		synctest.Wait()
		close(release)
		resp, err = svc.Call(t.Context(), 3)
		require.NoError(t, err)
		assert.Equal(t, 4, resp)
	})
}

func TestLayer_ReadyFunc(t *testing.T) {
	var ready atomic.Bool
	shed, err := loadshed.NewLayer[int, int](loadshed.Config{Readiness: loadshed.ReadyFunc(ready.Load)})
	require.NoError(t, err)
	var calls atomic.Int64
	svc := shed.Wrap(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		calls.Add(1)
		return req, nil
	}))
	_, err = svc.Call(t.Context(), 1)
	assert.ErrorIs(t, err, loadshed.ErrOverloaded)
	ready.Store(true)
	resp, err := svc.Call(t.Context(), 2)
	assert.NoError(t, err)
	assert.Equal(t, 2, resp)
	assert.Equal(t, int64(1), calls.Load())
}

func TestLayer_AllocatesNothing(t *testing.T) {
	var ready atomic.Bool
	shed, err := loadshed.NewLayer[int, int](loadshed.Config{Readiness: loadshed.ReadyFunc(ready.Load)})
	require.NoError(t, err)
	svc := shed.Wrap(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) { return req, nil }))
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, 1) }), "refused")
	ready.Store(true)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, 1) }), "served")
}

func TestWrap(t *testing.T) {
	svc, err := wrap.Service(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		return req, nil
	}), loadshed.NewLayer, loadshed.Config{Readiness: loadshed.ReadyFunc(func() bool { return false })})
	require.NoError(t, err)
	_, err = svc.Call(t.Context(), 1)
	assert.Same(t, loadshed.ErrOverloaded, err)
	_, err = loadshed.NewLayer[int, int](loadshed.Config{})
	assert.EqualError(t, err, "loadshed: readiness must not be nil")
}

func TestNewLayer_NilPointerReadinessIsAnError(t *testing.T) {
	var f loadshed.ReadyFunc
	_, err := loadshed.NewLayer[int, int](loadshed.Config{Readiness: f})
	assert.EqualError(t, err, "loadshed: readiness must not be a nil loadshed.ReadyFunc")
	var r *nilReady
	_, err = loadshed.NewLayer[int, int](loadshed.Config{Readiness: r})
	assert.EqualError(t, err, "loadshed: readiness must not be a nil *loadshed_test.nilReady")
}

type nilReady struct{}

func (*nilReady) Ready() bool { return true }

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

func TestLoadShed_EV6_Refused(t *testing.T) {
	var rec observetest.Recorder
	ready := true
	svc, err := wrap.Service(okService, loadshed.NewLayer, loadshed.Config{
		Readiness: loadshed.ReadyFunc(func() bool { return ready }), Name: "db", Observer: &rec,
	})
	require.NoError(t, err)
	_, err = svc.Call(context.Background(), "a")
	require.NoError(t, err)
	ready = false
	_, err = svc.Call(context.Background(), "b")
	require.ErrorIs(t, err, loadshed.ErrOverloaded)
	require.Equal(t, []observe.Event{
		{Source: observe.LoadShed, Name: "db", Kind: observe.Refused, Err: loadshed.ErrOverloaded},
	}, rec.Events())
}

// TestReadyFunc_NZ1_NilIsNeverReady: NewLayer rejects a nil ReadyFunc;
// called directly, it is never ready instead of panicking.
func TestReadyFunc_NZ1_NilIsNeverReady(t *testing.T) {
	assert.False(t, loadshed.ReadyFunc(nil).Ready())
}
