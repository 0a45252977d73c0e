package ramparthttp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// fakeTransport answers requests from a script of statuses (0 means a
// transport error) and records every attempt it sees.
type fakeTransport struct {
	mu       sync.Mutex
	statuses []int
	header   http.Header // added to every response
	calls    int
	bodies   []string    // request bodies, one per attempt
	at       []time.Time // when each attempt arrived
	returned []*trackedBody
}

var errTransport = errors.New("connection refused")

func (f *fakeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var body string
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		_ = req.Body.Close()
		body = string(b)
	}
	f.bodies = append(f.bodies, body)
	f.at = append(f.at, time.Now())
	status := f.statuses[min(f.calls, len(f.statuses)-1)]
	f.calls++
	if status == 0 {
		return nil, errTransport
	}
	tb := &trackedBody{Reader: strings.NewReader(http.StatusText(status))}
	f.returned = append(f.returned, tb)
	h := http.Header{}
	for k, v := range f.header {
		h[k] = v
	}
	return &http.Response{StatusCode: status, Header: h, Body: tb, Request: req}, nil
}

type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

func newClient(t *testing.T, cfg ramparthttp.ClientConfig) *http.Client {
	t.Helper()
	tr, err := ramparthttp.NewTransport(cfg)
	require.NoError(t, err)
	return &http.Client{Transport: tr}
}

var noBackoff, _ = retry.NewConstant(0)

func TestClient_RetriesFailingStatusAndClosesRetriedBodies(t *testing.T) {
	ft := &fakeTransport{statuses: []int{503, 500, 200}}
	c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{Backoff: noBackoff}})

	resp, err := c.Get("http://backend/x")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, 3, ft.calls)
	require.Len(t, ft.returned, 3)
	assert.True(t, ft.returned[0].closed.Load(), "retried 503 body closed")
	assert.True(t, ft.returned[1].closed.Load(), "retried 500 body closed")
	assert.False(t, ft.returned[2].closed.Load(), "returned body left to the caller")
}

func TestClient_RT5_LastFailingResponseReturnedAsIs(t *testing.T) {
	ft := &fakeTransport{statuses: []int{503}}
	c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Backoff: noBackoff}})

	resp, err := c.Get("http://backend/x")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, 3, ft.calls)
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, "Service Unavailable", string(body))
}

func TestClient_RT5_TransportErrorsExhaust(t *testing.T) {
	ft := &fakeTransport{statuses: []int{0}}
	c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Backoff: noBackoff}})

	resp, err := c.Get("http://backend/x")
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, errTransport)
	var ex *retry.ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, 3, ex.Attempts)
	assert.Equal(t, 3, ft.calls)
}

func TestClient_NonIdempotentNotRetriedByDefault(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    string
		key       string
		optIn     bool
		wantCalls int
	}{
		{name: "GET", method: http.MethodGet, wantCalls: 3},
		{name: "PUT", method: http.MethodPut, wantCalls: 3},
		{name: "DELETE", method: http.MethodDelete, wantCalls: 3},
		{name: "POST", method: http.MethodPost, wantCalls: 1},
		{name: "PATCH", method: http.MethodPatch, wantCalls: 1},
		{name: "POST with Idempotency-Key", method: http.MethodPost, key: "k-1", wantCalls: 3},
		{name: "POST with opt-in", method: http.MethodPost, optIn: true, wantCalls: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeTransport{statuses: []int{503}}
			c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{
				Backoff: noBackoff, RetryNonIdempotent: tc.optIn,
			}})
			req, err := http.NewRequest(tc.method, "http://backend/x", strings.NewReader("payload"))
			require.NoError(t, err)
			if tc.key != "" {
				req.Header.Set("Idempotency-Key", tc.key)
			}
			resp, err := c.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, 503, resp.StatusCode)
			assert.Equal(t, tc.wantCalls, ft.calls)
			for i, b := range ft.bodies {
				assert.Equal(t, "payload", b, "attempt %d body", i+1)
			}
		})
	}
}

func TestClient_BodyWithoutGetBodyNotRetried(t *testing.T) {
	ft := &fakeTransport{statuses: []int{503}}
	c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{Backoff: noBackoff}})
	req, err := http.NewRequest(http.MethodPut, "http://backend/x", io.NopCloser(strings.NewReader("once")))
	require.NoError(t, err)
	require.Nil(t, req.GetBody)

	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 1, ft.calls)
	assert.Equal(t, []string{"once"}, ft.bodies)
}

func TestClient_RT7_RetryAfterSecondsSetsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ft := &fakeTransport{statuses: []int{503, 200}, header: http.Header{"Retry-After": {"2"}}}
		small, _ := retry.NewConstant(10 * time.Millisecond)
		c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{Backoff: small}})
		start := time.Now()

		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, ft.at, 2)
		assert.Equal(t, 2*time.Second, ft.at[1].Sub(start))
	})
}

func TestClient_RT7_RetryAfterDateSetsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The bubble's clock starts at midnight UTC 2000-01-01, on a whole
		// second, so an HTTP date (whole seconds) is exact.
		at := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
		ft := &fakeTransport{statuses: []int{429, 200}, header: http.Header{"Retry-After": {at}}}
		c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{Backoff: noBackoff}})
		start := time.Now()

		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, ft.at, 2)
		assert.Equal(t, 3*time.Second, ft.at[1].Sub(start))
	})
}

func TestClient_RT7_RetryAfterPastDeadlineStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ft := &fakeTransport{statuses: []int{503, 200}, header: http.Header{"Retry-After": {"120"}}}
		c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{Backoff: noBackoff}})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://backend/x", nil)
		start := time.Now()

		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, 1, ft.calls)
		assert.Equal(t, time.Duration(0), time.Since(start))
	})
}

func TestClient_CB8_FailingStatusesTripBreaker(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 2},
		CoolDown: time.Minute,
	})
	require.NoError(t, err)
	ft := &fakeTransport{statuses: []int{503, 502, 200}}
	c := newClient(t, ramparthttp.ClientConfig{Base: ft, Breaker: br, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})

	for range 2 {
		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		resp.Body.Close()
	}
	assert.Equal(t, circuitbreaker.Open, br.State().State)

	body := &trackedBody{Reader: strings.NewReader("data")}
	req, _ := http.NewRequest(http.MethodPut, "http://backend/x", body)
	resp, err := c.Do(req)
	assert.Nil(t, resp)
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	var oe *circuitbreaker.OpenError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, 2, ft.calls, "a rejected request is not sent")
	assert.True(t, body.closed.Load(), "a rejected request's body is closed")
}

func TestClient_RT3_OpenBreakerEndsRetries(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 2},
		CoolDown: time.Minute,
	})
	require.NoError(t, err)
	ft := &fakeTransport{statuses: []int{0}}
	c := newClient(t, ramparthttp.ClientConfig{Base: ft, Breaker: br, Retry: ramparthttp.RetryConfig{MaxAttempts: 5, Backoff: noBackoff}})

	_, err = c.Get("http://backend/x")
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	var ex *retry.ExhaustedError
	assert.False(t, errors.As(err, &ex), "an open breaker is returned as it is, not as exhaustion")
	assert.Equal(t, 2, ft.calls)
}

// slowTransport answers after d, or fails when the request's context ends
// first; the body it returns fails to read once that context is done.
type slowTransport struct{ d time.Duration }

func (s slowTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case <-time.After(s.d):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: ctxBody{req.Context(), strings.NewReader("hello")}}, nil
}

type ctxBody struct {
	ctx context.Context
	r   io.Reader
}

func (b ctxBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	return b.r.Read(p)
}
func (b ctxBody) Close() error { return nil }

func TestClient_TO1_AttemptTimeoutIsBreakerFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 2},
			CoolDown: time.Minute,
		})
		require.NoError(t, err)
		c := newClient(t, ramparthttp.ClientConfig{
			Base: slowTransport{d: time.Hour}, Breaker: br, AttemptTimeout: 100 * time.Millisecond,
			Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Backoff: noBackoff},
		})
		start := time.Now()

		_, err = c.Get("http://backend/x")
		require.ErrorIs(t, err, circuitbreaker.ErrOpen, "two timed-out attempts trip the breaker, which ends the retries")
		assert.Equal(t, 200*time.Millisecond, time.Since(start))
		assert.Equal(t, circuitbreaker.Open, br.State().State)
	})
}

func TestClient_TO1_TimeoutErrorMatchesSentinels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, ramparthttp.ClientConfig{
			Base: slowTransport{d: time.Hour}, AttemptTimeout: 100 * time.Millisecond,
			Retry: ramparthttp.RetryConfig{MaxAttempts: 1},
		})
		_, err := c.Get("http://backend/x")
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestClient_TimeoutDoesNotCutOffBodyOfSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, ramparthttp.ClientConfig{
			Base: slowTransport{d: 10 * time.Millisecond}, AttemptTimeout: time.Second,
		})
		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "the body is readable after RoundTrip returned")
		assert.Equal(t, "hello", string(body))
		require.NoError(t, resp.Body.Close())
	})
}

func TestClient_CallerCancellationNotRetriedNorCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		require.NoError(t, err)
		c := newClient(t, ramparthttp.ClientConfig{Base: slowTransport{d: time.Hour}, Breaker: br})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://backend/x", nil)

		_, err = c.Do(req)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, circuitbreaker.Closed, br.State().State)
	})
}

func TestNewTransport_BadConfigNamesField(t *testing.T) {
	_, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{AttemptTimeout: -time.Second})
	assert.EqualError(t, err, "ramparthttp: ClientConfig.AttemptTimeout must be >= 0 (0 means no per-attempt timeout), got -1s")
	_, err = ramparthttp.NewTransport(ramparthttp.ClientConfig{Retry: ramparthttp.RetryConfig{MaxAttempts: -1}})
	require.Error(t, err)
	// The rest of the message is package retry's.
	assert.True(t, strings.HasPrefix(err.Error(), "ramparthttp: ClientConfig.Retry: retry: MaxAttempts must be"), err.Error())
}

func TestClient_EndToEndOverLoopback(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if hits.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(bytes.ToUpper(b))
	}))
	defer srv.Close()
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	c := newClient(t, ramparthttp.ClientConfig{Breaker: br, AttemptTimeout: 5 * time.Second,
		Retry: ramparthttp.RetryConfig{Backoff: noBackoff}})

	resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("abc"))
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode, "POST is not retried")
	resp.Body.Close()

	req, _ := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("abc"))
	resp, err = c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "ABC", string(body))
	assert.Equal(t, int32(3), hits.Load())
}
