package circuitbreaker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/wrap"
)

func TestLayer_CB8_DoneContextReturnsItsCause(t *testing.T) {
	errShutdown := errors.New("shutting down")
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}}})
	require.NoError(t, err)
	key := func(req string) string { return req }
	classify := func(string, error) rampart.Outcome { return rampart.Failure }
	inner := &backend{err: errBoom}
	group, err := wrap.Service3(rampart.Service[string, string](inner), circuitbreaker.NewGroupLayer, g, key, nil)
	require.NoError(t, err)
	classifiedGroup, err := wrap.Service3(rampart.Service[string, string](inner), circuitbreaker.NewGroupLayer, g, key, classify)
	require.NoError(t, err)
	calls := map[string]func(context.Context) error{
		"Run": func(ctx context.Context) error {
			_, err := circuitbreaker.Run(ctx, b, func(context.Context) (int, error) { inner.calls.Add(1); return 0, errBoom })
			return err
		},
		"NewLayer":                 serviceCall(guard(b, inner)),
		"NewLayer classified":      serviceCall(wrap.Layer(rampart.Service[string, string](inner), circuitbreaker.NewLayer, b, classify)),
		"NewGroupLayer":            serviceCall(group),
		"NewGroupLayer classified": serviceCall(classifiedGroup),
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			t.Run("with a cause", func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(context.Background())
				cancel(errShutdown)
				err := call(ctx)
				require.ErrorIs(t, err, context.Canceled)
				require.ErrorIs(t, err, errShutdown)
				assert.Equal(t, "context canceled: shutting down", err.Error())
			})
			t.Run("without a cause", func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				assert.Equal(t, context.Canceled, call(ctx), "the bare error when the cause is the error")
			})
		})
	}
	assert.Equal(t, int64(0), inner.calls.Load(), "nothing called")
	assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, b.State(), "nothing counted")
	assert.Empty(t, g.States(), "no breaker picked")
}

// serviceCall calls s with ctx and returns its error.
func serviceCall(s rampart.Service[string, string]) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := s.Call(ctx, "a")
		return err
	}
}
