package ramparthttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
)

// TestBreakerLayer_CB7_PanickingJudgeFreesTheProbe checks, against a real
// server, that a panic in the classifier or in the breaker's IsFailure
// during a HalfOpen probe continues to the caller with its value and
// re-opens the breaker with the cause ErrPanicked: the probe slot is free
// for the next call at once (the cool-down is Immediate), not after the
// probe lease.
func TestBreakerLayer_CB7_PanickingJudgeFreesTheProbe(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(up.Close)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	down.Close() // connection refused

	panicky := func(*http.Response, error) rampart.Outcome { panic("judge exploded") }
	for _, tc := range []struct {
		name      string
		url       string
		classify  circuitbreaker.Classifier[*http.Response]
		isFailure func(error) bool
	}{
		{name: "classify on a response", url: up.URL, classify: panicky},
		{name: "classify on an error", url: down.URL, classify: panicky},
		{name: "IsFailure on an error", url: down.URL, isFailure: func(error) bool { panic("judge exploded") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br, err := circuitbreaker.New(circuitbreaker.Config{
				Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: circuitbreaker.Immediate,
				IsFailure: tc.isFailure,
			})
			require.NoError(t, err)
			p, err := br.TryAcquire()
			require.NoError(t, err)
			p.Failure(errTransport)
			svc := ramparthttp.NewBuilder().Layer(breakerLayer(t, ramparthttp.BreakerConfig{Breaker: br, Classify: tc.classify})).Service(ramparthttp.FromRoundTripper(nil))
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, tc.url, nil)
			require.NoError(t, err)

			assert.PanicsWithValue(t, "judge exploded", func() { _, _ = svc.Call(t.Context(), req) })
			assert.Equal(t, circuitbreaker.Snapshot{
				State: circuitbreaker.HalfOpen, Cause: circuitbreaker.ErrPanicked,
			}, br.State())
			p, err = br.TryAcquire()
			require.NoError(t, err, "the probe's slot is free")
			p.Ignore()
		})
	}
}
