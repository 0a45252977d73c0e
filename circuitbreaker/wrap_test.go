package circuitbreaker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/wrap"
)

// badResponse judges the response "bad" a failure.
func badResponse(resp string, err error) rampart.Outcome {
	if err != nil || resp == "ok:bad" {
		return rampart.Failure
	}
	return rampart.Success
}

// The Wrap twins guard svc as their layers do, with the type arguments
// inferred: a response the classifier judges bad trips a breaker that
// trips on one failure, and a group trips only the request's key.
func TestWrapTwins_CB4_CB18_GuardAsTheirLayers(t *testing.T) {
	cfg := circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}}
	key := func(req string) string { return req }
	tests := []struct {
		name string
		// wrap returns the wrapped backend and the breaker that guards
		// the request "bad".
		wrap func(t *testing.T) (rampart.Service[string, string], *circuitbreaker.Breaker)
	}{{
		name: "NewLayer",
		wrap: func(t *testing.T) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			b := newBreaker(t, cfg)
			return wrap.Layer(&backend{}, circuitbreaker.NewLayer, b, badResponse), b
		},
	}, {
		name: "NewGroupLayer",
		wrap: func(t *testing.T) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			g := newGroup(t, circuitbreaker.GroupConfig{Breaker: cfg})
			svc, err := wrap.Service3(&backend{}, circuitbreaker.NewGroupLayer, g, key, badResponse)
			require.NoError(t, err)
			return svc, g.Breaker("bad")
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, b := tt.wrap(t)
			resp, err := svc.Call(t.Context(), "bad")
			require.NoError(t, err)
			assert.Equal(t, "ok:bad", resp)
			assert.Equal(t, circuitbreaker.Open, b.State().State)
			_, err = svc.Call(t.Context(), "bad")
			var oe *circuitbreaker.OpenError
			require.ErrorAs(t, err, &oe)
			assert.Same(t, circuitbreaker.ErrBadResponse, oe.Cause, "tripped by the bad response")
		})
	}

	t.Run("NewGroupLayer unclassified", func(t *testing.T) {
		g := newGroup(t, circuitbreaker.GroupConfig{Breaker: cfg})
		svc, err := wrap.Service3(&backend{err: errBoom}, circuitbreaker.NewGroupLayer, g, key, nil)
		require.NoError(t, err)
		_, err = svc.Call(t.Context(), "a")
		assert.Same(t, errBoom, err)
		_, err = svc.Call(t.Context(), "a")
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "a", oe.Name, "a's own breaker")
		assert.Same(t, errBoom, oe.Cause)
		_, err = svc.Call(t.Context(), "b")
		assert.Same(t, errBoom, err, "b has its own breaker")
	})
}

// The layer constructors name a nil argument, and a layer's Wrap of a nil
// service fails every call with an error matching rampart.ErrNilService.
func TestLayers_CB15_NilArguments(t *testing.T) {
	var g circuitbreaker.Group[string]
	key := func(req string) string { return req }
	_, err := circuitbreaker.NewGroupLayer[string, string, string](nil, key, nil)
	assert.EqualError(t, err, "circuitbreaker: group layer: nil *Group (build one with circuitbreaker.NewGroup)")
	_, err = circuitbreaker.NewGroupLayer[string, string, string](&g, nil, nil)
	assert.EqualError(t, err, "circuitbreaker: group layer: nil key func")
	l, err := circuitbreaker.NewGroupLayer[string, string](&g, key, nil)
	require.NoError(t, err)
	_, err = l.Wrap(nil).Call(t.Context(), "a")
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "circuitbreaker: group layer Wrap: rampart: nil service")
	_, err = circuitbreaker.NewLayer[string, string](&circuitbreaker.Breaker{}, nil).Wrap(nil).Call(t.Context(), "a")
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "circuitbreaker: Wrap: rampart: nil service")
}
