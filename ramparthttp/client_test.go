package ramparthttp_test

import (
	"bytes"
	"context"
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
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
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

// Every request through the client's breaker is reported once, with the
// outcome the breaker was given: the counts by outcome are those of what
// the callers got, over a real loopback connection, with one breaker or
// with a breaker per host.
func TestClient_EV12_EveryRequestReportedOnce(t *testing.T) {
	for _, perHost := range []bool{false, true} {
		name := map[bool]string{false: "Breaker", true: "HostBreakers"}[perHost]
		t.Run(name, func(t *testing.T) {
			srv := loopback(t)
			var obs observetest.Counter
			bcfg := circuitbreaker.Config{Name: "api", Policy: circuitbreaker.Consecutive{Failures: 5}, Observer: &obs}
			cfg := ramparthttp.ClientConfig{Retry: ramparthttp.RetryConfig{MaxAttempts: 1}}
			if perHost {
				g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: bcfg})
				require.NoError(t, err)
				cfg.Breakers = g
			} else {
				b, err := circuitbreaker.New(bcfg)
				require.NoError(t, err)
				cfg.Breaker = b
			}
			c := newClient(t, cfg)
			got := map[string]int{"success": 0, "failure": 0, "ignored": 0, "rejected": 0}
			get := func(ctx context.Context, path string, read bool) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
				require.NoError(t, err)
				resp, err := c.Do(req)
				switch {
				case errors.Is(err, circuitbreaker.ErrOpen):
					got["rejected"]++
					return
				case err != nil:
					t.Fatalf("GET %s: %v", path, err)
				}
				defer resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusServiceUnavailable:
					got["failure"]++
				case !read:
					got["success"]++ // closed early: the server did its part
				default:
					_, rerr := io.ReadAll(resp.Body)
					require.NoError(t, rerr)
					got["success"]++
				}
			}
			ctx := context.Background()
			for range 4 {
				get(ctx, "/ok", true)
			}
			get(ctx, "/ok", false)
			cancelAfterHeaders(t, c, srv.URL+"/stall", got)
			for range 5 {
				get(ctx, "/down", true)
			}
			for range 5 {
				get(ctx, "/ok", true)
			}
			require.Equal(t, map[string]int{"success": 5, "failure": 5, "ignored": 1, "rejected": 5}, got)
			require.Equal(t, got, obs.Outcomes())
		})
	}
}
