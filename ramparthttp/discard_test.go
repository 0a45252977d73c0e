package ramparthttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
)

// shortBody declares more bytes than it has: it yields what it has, then
// stalls until it is closed.
type shortBody struct {
	io.Reader
	stalledBody
}

func (b *shortBody) Read(p []byte) (int, error) {
	if n, _ := b.Reader.Read(p); n > 0 {
		return n, nil
	}
	return b.stalledBody.Read(p)
}

// A retried response that declares a small body and stalls part way is read
// for at most 10ms, then closed, whatever AttemptTimeout is (here none): a
// stalling server cannot hold up the next attempt.
func TestClient_HT4_StalledSmallBodyDelaysRetryAtMostTheDrainBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var at []time.Duration
		var bodies []*shortBody
		start := time.Now()
		rt := roundTripFunc(func(*http.Request) (*http.Response, error) {
			at = append(at, time.Since(start))
			b := &shortBody{Reader: strings.NewReader("0123456789"), stalledBody: stalledBody{closed: make(chan struct{})}}
			bodies = append(bodies, b)
			return &http.Response{StatusCode: 503, Header: http.Header{}, Body: b, ContentLength: 100}, nil
		})
		c := newClient(t, ramparthttp.ClientConfig{Base: rt, Retry: ramparthttp.RetryConfig{MaxAttempts: 2, Backoff: noBackoff}})

		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []time.Duration{0, 10 * time.Millisecond}, at)
		assert.True(t, bodies[0].once.Load(), "the retried body is closed")
	})
}

// The same over loopback: the server sends 10 of the 100 bytes it declared
// and stalls for 3s. The retried GET completes, and the first connection is
// closed, before the stall ends.
func TestClient_HT4_StalledSmallBodyOverLoopbackDoesNotHoldUpRetry(t *testing.T) {
	var calls atomic.Int32
	stallEnded := make(chan struct{})
	aborted := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) > 1 {
			_, _ = io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "0123456789")
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done(): // the client closed the connection
			close(aborted)
		case <-time.After(3 * time.Second):
			close(stallEnded)
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	br, err := circuitbreaker.New(circuitbreaker.Config{}) // its body wrapper sees the Close during the Read
	require.NoError(t, err)
	c := newClient(t, ramparthttp.ClientConfig{Base: base, Breaker: br, Retry: ramparthttp.RetryConfig{MaxAttempts: 2, Backoff: noBackoff}})

	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)

	select {
	case <-stallEnded:
		t.Fatal("the retried GET waited for the stalled body")
	default:
	}
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", string(body))
	assert.Equal(t, int32(2), calls.Load())
	select {
	case <-aborted: // the server saw the first connection closed
	case <-stallEnded:
		t.Fatal("the first connection was left open until the stall ended")
	}
}
