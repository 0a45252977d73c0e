package ramparthttp_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
)

// stalledBody never yields a byte until it is closed.
type stalledBody struct {
	closed chan struct{}
	once   atomic.Bool
}

func (b *stalledBody) Read([]byte) (int, error) { <-b.closed; return 0, errors.New("closed") }
func (b *stalledBody) Close() error {
	if b.once.CompareAndSwap(false, true) {
		close(b.closed)
	}
	return nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestClient_StalledBodyOfRetriedResponseDoesNotDelayRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var at []time.Duration
		start := time.Now()
		var bodies []*stalledBody
		rt := roundTripFunc(func(*http.Request) (*http.Response, error) {
			at = append(at, time.Since(start))
			b := &stalledBody{closed: make(chan struct{})}
			bodies = append(bodies, b)
			return &http.Response{StatusCode: 503, Header: http.Header{}, Body: b}, nil
		})
		backoff, _ := retry.NewConstant(10 * time.Millisecond)
		c := newClient(t, ramparthttp.ClientConfig{Base: rt, Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Backoff: backoff}})

		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, []time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond}, at)
		require.Len(t, bodies, 3)
		assert.True(t, bodies[0].once.Load())
		assert.True(t, bodies[1].once.Load())
		assert.False(t, bodies[2].once.Load(), "the returned response is the caller's to close")
		resp.Body.Close()
	})
}

func TestClient_NilResponseWithNilErrorIsAnError(t *testing.T) {
	rt := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })
	c := newClient(t, ramparthttp.ClientConfig{Base: rt, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})
	resp, err := c.Get("http://backend/x")
	assert.Nil(t, resp)
	assert.EqualError(t, err, `Get "http://backend/x": ramparthttp: ramparthttp_test.roundTripFunc returned a nil *http.Response with a nil error`)
}

func TestClient_ResponseWithErrorKeepsOnlyTheError(t *testing.T) {
	boom := errors.New("boom")
	body := &trackedBody{Reader: strings.NewReader("x")}
	rt := roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: body}, boom
	})
	c := newClient(t, ramparthttp.ClientConfig{Base: rt, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})
	resp, err := c.Get("http://backend/x")
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, boom)
	assert.True(t, body.closed.Load())
}

func TestClient_StatusesThatNoRetryCures(t *testing.T) {
	for _, tc := range []struct {
		status    int
		wantCalls int
	}{
		{status: 500, wantCalls: 3},
		{status: 501, wantCalls: 1},
		{status: 502, wantCalls: 3},
		{status: 505, wantCalls: 1},
		{status: 429, wantCalls: 3},
		{status: 404, wantCalls: 1},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			ft := &fakeTransport{statuses: []int{tc.status}}
			c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{Backoff: noBackoff}})
			resp, err := c.Get("http://backend/x")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.wantCalls, ft.calls)
		})
	}
}

func TestClient_RT7_RetryAfterOnlyOn429And503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ft := &fakeTransport{statuses: []int{500, 200}, header: http.Header{"Retry-After": {"2"}}}
		c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{Backoff: noBackoff}})
		start := time.Now()
		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, ft.at, 2)
		assert.Equal(t, time.Duration(0), ft.at[1].Sub(start), "a 500's Retry-After is not a retry hint")
	})
}

func TestClient_OneAttemptReturnsTransportErrorUnwrapped(t *testing.T) {
	ft := &fakeTransport{statuses: []int{0}}
	c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})
	_, err := c.Get("http://backend/x")
	var ex *retry.ExhaustedError
	assert.False(t, errors.As(err, &ex))
	assert.ErrorIs(t, err, errTransport)
}

func TestClient_CB8_IsFailureOverrulesTransportErrors(t *testing.T) {
	var asked atomic.Int32
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:    circuitbreaker.Consecutive{Failures: 2},
		IsFailure: func(error) bool { asked.Add(1); return false },
	})
	require.NoError(t, err)
	ft := &fakeTransport{statuses: []int{0, 0, 0, 503, 503}}
	c := newClient(t, ramparthttp.ClientConfig{Base: ft, Breaker: br, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})

	for range 3 {
		_, err := c.Get("http://backend/x")
		require.ErrorIs(t, err, errTransport)
	}
	assert.Equal(t, int32(3), asked.Load())
	assert.Equal(t, circuitbreaker.Closed, br.State().State, "IsFailure said the errors are not failures")

	for range 2 {
		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		resp.Body.Close()
	}
	assert.Equal(t, int32(3), asked.Load(), "IsFailure is not asked about statuses")
	assert.Equal(t, circuitbreaker.Open, br.State().State)
}

// A short error page is read to its end before the retry, so the retries
// reuse one keep-alive connection instead of opening one each.
func TestClient_RetriedShortBodiesKeepTheConnection(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	c := newClient(t, ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Backoff: noBackoff}})

	for range 10 {
		resp, err := c.Get(srv.URL)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	assert.Equal(t, int32(1), conns.Load(), "30 attempts over one connection")
}

func TestNewTransport_NilPointerBaseIsAnError(t *testing.T) {
	var base *http.Transport
	_, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Base: base})
	assert.EqualError(t, err, "ramparthttp: ClientConfig.Base must not be a nil pointer, got *http.Transport(nil)")
}

// A nil Service follows the one rule for nil services: every request fails
// with an error matching rampart.ErrNilService that names NewRoundTripper.
func TestNewRoundTripper_HT2_NilServiceFailsEachRequest(t *testing.T) {
	c := &http.Client{Transport: ramparthttp.NewRoundTripper(nil)}
	_, err := c.Get("http://backend/x")
	require.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, `Get "http://backend/x": ramparthttp: NewRoundTripper: rampart: nil service`)
}
