package loadshed_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/observe"
)

var okService = rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })

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

func TestLoadShed_EV6_ThrottleRefused(t *testing.T) {
	var rec observetest.Recorder
	th, err := loadshed.NewThrottle(loadshed.ThrottleConfig{
		Rand: func() float64 { return 0 }, Name: "backend", Observer: &rec,
	})
	require.NoError(t, err)
	down := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", errors.New("down") })
	svc, err := wrap.Service2(down, loadshed.NewThrottleLayer, th, nil)
	require.NoError(t, err)
	_, err = svc.Call(context.Background(), "a") // sent: no history yet
	require.EqualError(t, err, "down")
	require.Empty(t, rec.Events())
	_, err = svc.Call(context.Background(), "b") // refused with probability 1/2 > 0
	require.ErrorIs(t, err, loadshed.ErrOverloaded)
	require.Equal(t, []observe.Event{
		{Source: observe.LoadShed, Name: "backend", Kind: observe.Refused, Err: loadshed.ErrOverloaded},
	}, rec.Events())
}
