package fallback_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/fallback"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

func TestFallback_EV7_Used(t *testing.T) {
	var rec observetest.Recorder
	errDown := errors.New("down")
	inner := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
		if req == "fail" {
			return "", errDown
		}
		return req, nil
	})
	svc, err := wrap.Service(inner, fallback.NewLayer, fallback.Config[string, string]{
		Fallback: func(context.Context, string, error) (string, error) { return "cached", nil },
		Name:     "profile", Observer: &rec,
	})
	require.NoError(t, err)
	resp, err := svc.Call(context.Background(), "ok")
	require.NoError(t, err)
	require.Equal(t, "ok", resp)
	require.Empty(t, rec.Events())
	resp, err = svc.Call(context.Background(), "fail")
	require.NoError(t, err)
	require.Equal(t, "cached", resp)
	require.Equal(t, []observe.Event{
		{Source: observe.Fallback, Name: "profile", Kind: observe.FallbackUsed, Err: errDown},
	}, rec.Events())
}
