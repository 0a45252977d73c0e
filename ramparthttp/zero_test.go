package ramparthttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
)

// The zero Handler, and a nil *Handler, answer every request with a bare
// 500 instead of panicking.
func TestHandler_ZeroValueAnswers500(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{name: "zero Handler", h: &ramparthttp.Handler{}},
		{name: "nil *Handler", h: (*ramparthttp.Handler)(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			require.NotPanics(t, func() { tc.h.ServeHTTP(rec, get()) })
			assert.Equal(t, http.StatusInternalServerError, rec.Code)
			assert.Equal(t, "Internal Server Error\n", rec.Body.String())
		})
	}
}

// A client layer given a nil inner service fails each call with an error
// matching rampart.ErrNilService that names the layer, instead of panicking.
func TestLayers_WrapNilFailsEachCall(t *testing.T) {
	rl, err := ramparthttp.RetryLayer(ramparthttp.RetryConfig{})
	require.NoError(t, err)
	hl, err := ramparthttp.HedgeLayer(ramparthttp.HedgeConfig{Budget: budget.Always})
	require.NoError(t, err)
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	ht, err := ramparthttp.HeaderTimeoutLayer(time.Second)
	require.NoError(t, err)
	hosts, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		layer   ramparthttp.Layer
		wantErr string
	}{
		{name: "retry", layer: rl, wantErr: "ramparthttp: RetryLayer: Wrap: rampart: nil service"},
		{name: "hedge", layer: hl, wantErr: "ramparthttp: HedgeLayer: Wrap: rampart: nil service"},
		{name: "breaker", layer: breakerLayer(t, ramparthttp.BreakerConfig{Breaker: br}), wantErr: "ramparthttp: BreakerLayer: Wrap: rampart: nil service"},
		{name: "header timeout", layer: ht, wantErr: "ramparthttp: HeaderTimeoutLayer: Wrap: rampart: nil service"},
		{name: "group breaker", layer: breakerLayer(t, ramparthttp.BreakerConfig{Breakers: hosts}), wantErr: "ramparthttp: BreakerLayer: Wrap: rampart: nil service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := tc.layer.Wrap(nil)
			var resp *http.Response
			require.NotPanics(t, func() {
				resp, err = svc.Call(context.Background(), httptest.NewRequest(http.MethodGet, "http://backend/x", nil))
			})
			assert.Nil(t, resp)
			require.ErrorIs(t, err, rampart.ErrNilService)
			assert.EqualError(t, err, tc.wantErr)
		})
	}
}

// The message states the accepted values, zero (no timeout) included.
// ServerConfig's messages are checked in TestNewHandler_BadConfigNamesField.
func TestNewTransport_AttemptTimeoutMessageStatesAcceptedValues(t *testing.T) {
	_, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{AttemptTimeout: -time.Second})
	assert.EqualError(t, err, "ramparthttp: ClientConfig.AttemptTimeout must be >= 0 (0 means no per-attempt timeout), got -1s")
}

// A BreakerConfig with both or neither breaker is an error naming the
// fields.
func TestBreakerLayer_BadConfigNamesFields(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	_, err = ramparthttp.BreakerLayer(ramparthttp.BreakerConfig{})
	assert.EqualError(t, err, "ramparthttp: BreakerConfig needs a Breaker or Breakers, got neither")
	_, err = ramparthttp.BreakerLayer(ramparthttp.BreakerConfig{Breaker: br, Breakers: &circuitbreaker.Group[string]{}})
	assert.EqualError(t, err, "ramparthttp: BreakerConfig.Breaker and BreakerConfig.Breakers must not both be set (one breaker for every request, or one per key)")
}
