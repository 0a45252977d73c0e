package ramparthttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/ramparthttp"
)

// An adaptive concurrency limit protects a server through the same layer
// as the fixed one: a request finding its slots taken is answered 503 at
// once, with a Retry-After from the refusal's delay, the limiter's latest
// average latency (1.5s, rounded up to 2 whole seconds).
func TestHandler_LM9_AdaptiveLimitRefusesWithItsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: 1, MaxLimit: 1, Window: time.Second})
		require.NoError(t, err)
		layer, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
		require.NoError(t, err)
		release := make(chan struct{})
		h, err := ramparthttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hold" {
				<-release
				return
			}
			time.Sleep(1500 * time.Millisecond)
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{layer}, RetryAfter: 5 * time.Second})
		require.NoError(t, err)
		serveOne := func(path string) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			return rec
		}

		for range 10 { // a window of ten 1.5s requests, closed by the tenth
			require.Equal(t, http.StatusOK, serveOne("/").Code)
		}
		require.Equal(t, 1500*time.Millisecond, lim.Baseline())

		held := make(chan int)
		go func() { held <- serveOne("/hold").Code }()
		synctest.Wait()
		start := time.Now()
		rec := serveOne("/")
		assert.Equal(t, time.Duration(0), time.Since(start))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, "2", rec.Header().Get("Retry-After"))
		close(release)
		assert.Equal(t, http.StatusOK, <-held)
	})
}
