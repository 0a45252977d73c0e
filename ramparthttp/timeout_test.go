package ramparthttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/timeout"
)

// slowBody answers 200 with its headers at once, then its body after
// delay.
func slowBody(delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-time.After(delay):
			io.WriteString(w, "done")
		case <-r.Context().Done(): // the client gave up
		}
	})
}

// Headers at once and a body 3 s later, under a 1 s HeaderTimeout: the
// body is read whole, at exactly 3 s, and the breaker counts a success.
// Under a 1 s AttemptTimeout instead, the same download is cut at exactly
// 1 s and counted as a failure: the difference between the two limits.
func TestHeaderTimeout_HT8_SlowBodyIsNotAFailure(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        ramparthttp.ClientConfig
		wantBody   string
		wantErr    error
		wantAt     time.Duration
		wantFailed int
	}{
		{name: "HeaderTimeout", cfg: ramparthttp.ClientConfig{HeaderTimeout: time.Second},
			wantBody: "done", wantAt: 3 * time.Second},
		{name: "AttemptTimeout", cfg: ramparthttp.ClientConfig{AttemptTimeout: time.Second},
			wantErr: timeout.ErrTimeout, wantAt: time.Second, wantFailed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				br := countingBreaker(t)
				cfg := tc.cfg
				cfg.Base = pipeServer(t, slowBody(3*time.Second))
				cfg.Breaker = br
				cfg.Retry = ramparthttp.RetryConfig{MaxAttempts: 1}
				c := newClient(t, cfg)

				start := time.Now()
				resp, err := c.Get("http://backend/download")
				require.NoError(t, err)
				assert.Equal(t, time.Duration(0), time.Since(start), "headers at once")
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, resp.Body.Close())
				assert.Equal(t, tc.wantAt, time.Since(start))
				assert.Equal(t, tc.wantBody, string(body))
				if tc.wantErr != nil {
					assert.ErrorIs(t, err, tc.wantErr)
				} else {
					assert.NoError(t, err)
				}
				assert.Equal(t, circuitbreaker.Counts{Calls: 1, Failures: tc.wantFailed}, br.State().Counts)
			})
		})
	}
}

// A server that holds its headers for 2 s, under a 1 s HeaderTimeout: the
// attempt is cancelled at exactly 1 s with a timeout, counted by the
// breaker as a failure, and retried at once when the request is
// idempotent; a POST is not retried and fails with the timeout, which
// net/http's client reports as one.
func TestHeaderTimeout_HT8_LateHeadersTimeOutAndRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Read the body, so that the server notices the client going
			// away and cancels r's context.
			_, _ = io.Copy(io.Discard, r.Body)
			if calls.Add(1) == 1 {
				select {
				case <-time.After(2 * time.Second):
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, "ok")
		})
		br := countingBreaker(t)
		c := newClient(t, ramparthttp.ClientConfig{Base: pipeServer(t, h), Breaker: br, HeaderTimeout: time.Second,
			Retry: ramparthttp.RetryConfig{MaxAttempts: 2, Backoff: noBackoff}})

		start := time.Now()
		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, "ok", string(body))
		assert.Equal(t, time.Second, time.Since(start))
		assert.Equal(t, int32(2), calls.Load())
		assert.Equal(t, circuitbreaker.Counts{Calls: 2, Failures: 1}, br.State().Counts)

		calls.Store(0)
		start = time.Now()
		_, err = c.Post("http://backend/x", "text/plain", strings.NewReader("once"))
		assert.Equal(t, time.Second, time.Since(start))
		assert.Equal(t, int32(1), calls.Load())
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var te *timeout.Error
		require.ErrorAs(t, err, &te)
		assert.Equal(t, time.Second, te.After)
		var ue *url.Error
		require.ErrorAs(t, err, &ue)
		assert.True(t, ue.Timeout())
		assert.Equal(t, circuitbreaker.Counts{Calls: 3, Failures: 2}, br.State().Counts)
	})
}

// The same over a real loopback socket, asserted by channels: the first
// attempt's server sees its request cancelled (the client gave up waiting
// for headers), the retry is answered, and the breaker counts one failure
// and one success.
func TestHeaderTimeout_HT8_Loopback_LateHeadersRetried(t *testing.T) {
	var calls atomic.Int32
	gaveUp := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-r.Context().Done() // no headers until the client gives up
			close(gaveUp)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	br := countingBreaker(t)
	c := newClient(t, ramparthttp.ClientConfig{Base: srv.Client().Transport, Breaker: br, HeaderTimeout: 250 * time.Millisecond, // long enough for the retry's headers on a loaded machine
		Retry: ramparthttp.RetryConfig{MaxAttempts: 2, Backoff: noBackoff}})

	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, "ok", string(body))
	<-gaveUp
	assert.Equal(t, int32(2), calls.Load())
	assert.Equal(t, circuitbreaker.Counts{Calls: 2, Failures: 1}, br.State().Counts)
}

// Over a real loopback socket: headers at once, then a body held until
// well past the HeaderTimeout. The attempt's context (as the base
// RoundTripper sees it) is still live when the body is released, the body
// is read whole, and the breaker counts a success.
func TestHeaderTimeout_HT8_Loopback_SlowBodyNotAFailure(t *testing.T) {
	const limit = 250 * time.Millisecond // long enough for prompt headers on a loaded machine
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-release:
			io.WriteString(w, "done")
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	attempt := make(chan context.Context, 1)
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		attempt <- r.Context()
		return srv.Client().Transport.RoundTrip(r)
	})
	br := countingBreaker(t)
	c := newClient(t, ramparthttp.ClientConfig{Base: base, Breaker: br, HeaderTimeout: limit,
		Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})

	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	ctx := <-attempt
	select {
	case <-ctx.Done():
		t.Fatalf("the header timeout ended the attempt after its headers: %v", context.Cause(ctx))
	case <-time.After(2 * limit): // the limit's timer, started before the headers, is past
	}
	close(release)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, "done", string(body))
	assert.Equal(t, circuitbreaker.Counts{Calls: 1, Failures: 0}, br.State().Counts)
	<-ctx.Done() // closing the body ends the attempt's context
}

// A base that returns a response only after the limit has fired (ignoring
// the cancellation) still yields a timeout, never a response with a dead
// context, and the late response's body is closed.
func TestHeaderTimeoutLayer_HT8_ResponseAfterLimitIsATimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var late *trackedBody
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			late = &trackedBody{Reader: strings.NewReader("late")}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: late, Request: r}, nil
		})
		l, err := ramparthttp.HeaderTimeoutLayer(time.Second)
		require.NoError(t, err)
		svc := l.Wrap(ramparthttp.FromRoundTripper(base))
		start := time.Now()
		resp, err := svc.Call(context.Background(), httptest.NewRequest(http.MethodGet, "http://backend/x", nil))
		assert.Equal(t, time.Second, time.Since(start))
		assert.Nil(t, resp)
		assert.EqualError(t, err, "timeout: deadline of 1s exceeded")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, late.closed.Load())
	})
}

// The caller's own deadline is the caller's: when it ends the call before
// the header limit, the error is the caller's context error, not a
// timeout of the layer.
func TestHeaderTimeoutLayer_HT8_CallerDeadlineIsTheCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, context.Cause(r.Context())
		})
		l, err := ramparthttp.HeaderTimeoutLayer(time.Second)
		require.NoError(t, err)
		svc := l.Wrap(ramparthttp.FromRoundTripper(base))
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err = svc.Call(ctx, httptest.NewRequest(http.MethodGet, "http://backend/x", nil))
		assert.Equal(t, context.DeadlineExceeded, err)
		assert.NotErrorIs(t, err, timeout.ErrTimeout)
	})
}

// Bad values are errors naming the field and the accepted values.
func TestHeaderTimeout_HT2_BadValues(t *testing.T) {
	_, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{HeaderTimeout: -time.Second})
	assert.EqualError(t, err, "ramparthttp: ClientConfig.HeaderTimeout must be >= 0 (0 means no limit on the time to the response headers), got -1s")
	_, err = ramparthttp.HeaderTimeoutLayer(0)
	assert.EqualError(t, err, "ramparthttp: header timeout must be > 0, got 0s")
}

// An AttemptTimeout that ends a body midway is told to the Observer as
// the timeout layer tells of one that ends an attempt before its headers,
// once however often the body is read after it, so that
// rampart.timeout.fired counts the timeouts the breaker counted; a body
// read whole in time and a caller that gives up midway are no timeout.
func TestNewTransport_TO1_BodyEndedByAttemptTimeoutIsObserved(t *testing.T) {
	fired := observe.Event{Source: observe.Timeout, Name: "backend", Kind: observe.TimeoutFired, Duration: time.Second}
	for _, tc := range []struct {
		name       string
		delay      time.Duration
		cancelAt   time.Duration
		wantEvents []observe.Event
		wantFailed int
	}{
		{name: "cut by the deadline", delay: 3 * time.Second, wantEvents: []observe.Event{fired}, wantFailed: 1},
		{name: "read in time", delay: 500 * time.Millisecond},
		{name: "the caller gives up", delay: 3 * time.Second, cancelAt: 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var seen observetest.Recorder
				br := countingBreaker(t)
				c := newClient(t, ramparthttp.ClientConfig{
					Base: pipeServer(t, slowBody(tc.delay)), Breaker: br, AttemptTimeout: time.Second,
					Retry: ramparthttp.RetryConfig{MaxAttempts: 1}, Name: "backend", Observer: &seen,
				})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://backend/download", nil)
				require.NoError(t, err)
				resp, err := c.Do(req)
				require.NoError(t, err)
				_, err = io.ReadAll(resp.Body)
				if len(tc.wantEvents) > 0 {
					require.ErrorIs(t, err, timeout.ErrTimeout)
					_, again := resp.Body.Read(make([]byte, 1))
					require.Error(t, again, "read again after the deadline")
				}
				require.NoError(t, resp.Body.Close())
				assert.Equal(t, tc.wantEvents, seen.Events())
				assert.Equal(t, tc.wantFailed, br.State().Counts.Failures)
			})
		})
	}
}
