package ramparthttp_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/ramparthttp"
)

// A 101 Switching Protocols response's body is the connection, writable
// (a WebSocket's, an h2c upgrade's): a wrapper that hid its Write would
// break every upgrade made through the client (httputil.ReverseProxy
// refuses such a body). Through the whole stack, both timeouts and a
// breaker, the body stays writable, the connection carries data both
// ways, the breaker counts the upgrade a success, and Close ends the
// attempt's contexts.
func TestBody_HT13_UpgradeBodyStaysWritable(t *testing.T) {
	srv := echoUpgradeServer()
	defer srv.Close()
	counter := &observetest.Counter{}
	br, err := circuitbreaker.New(circuitbreaker.Config{Observer: counter})
	require.NoError(t, err)
	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
		Base:           srv.Client().Transport,
		Breaker:        br,
		AttemptTimeout: time.Hour,
		HeaderTimeout:  time.Hour,
	})
	require.NoError(t, err)
	resp, err := tr.RoundTrip(upgradeRequest(t, srv.URL))
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	conn, ok := resp.Body.(io.ReadWriteCloser)
	require.True(t, ok, "the body of a 101 is writable, got %T", resp.Body)

	r := bufio.NewReader(conn)
	for _, line := range []string{"ping\n", "pong\n"} {
		_, err = io.WriteString(conn, line)
		require.NoError(t, err)
		got, err := r.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, line, got)
	}
	assert.Equal(t, map[string]int{"success": 1, "failure": 0, "ignored": 0, "rejected": 0}, counter.Outcomes())
	attempt := resp.Request.Context()
	require.NoError(t, attempt.Err(), "the attempt's context lives until the body is closed")
	require.NoError(t, conn.Close())
	assert.ErrorIs(t, attempt.Err(), context.Canceled)
}

// An upgraded connection is the caller's once it is returned: the
// attempt's deadline ends the attempt's context, not the connection,
// which still carries data both ways after it (as a gRPC stream once
// open is never ended by its AttemptTimeout). The deadline is the
// attempt's own, long enough for the upgrade's headers on a loaded
// machine; the test waits for it to pass, whatever the time it takes.
func TestBody_HT13_AttemptDeadlineDoesNotEndAnUpgrade(t *testing.T) {
	srv := echoUpgradeServer()
	defer srv.Close()
	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Base: srv.Client().Transport, AttemptTimeout: 2 * time.Second})
	require.NoError(t, err)
	resp, err := tr.RoundTrip(upgradeRequest(t, srv.URL))
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	conn, ok := resp.Body.(io.ReadWriteCloser)
	require.True(t, ok, "the body of a 101 is writable, got %T", resp.Body)
	defer conn.Close()
	<-resp.Request.Context().Done()
	require.ErrorIs(t, resp.Request.Context().Err(), context.DeadlineExceeded)

	_, err = io.WriteString(conn, "after the deadline\n")
	require.NoError(t, err)
	got, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "after the deadline\n", got)
}

// echoUpgradeServer answers a request that asks to upgrade to "echo"
// with 101 Switching Protocols, then sends back every line it reads.
func echoUpgradeServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "upgrade required", http.StatusUpgradeRequired)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = rw.Flush()
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = rw.WriteString(line)
			_ = rw.Flush()
		}
	}))
}

// upgradeRequest is a GET that asks to upgrade to "echo".
func upgradeRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	return req
}

// A response without a body (http.NoBody: a HEAD, a 204, a 304) has
// nothing to read through the attempt's context: the context ends when
// the response is returned, and the body is returned unwrapped, so a
// caller that never closes it holds no timer or context.
func TestBody_HT13_NoBodyEndsTheAttemptAtOnce(t *testing.T) {
	var attempt context.Context
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		attempt = req.Context()
		return &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	})
	for _, cfg := range []ramparthttp.ClientConfig{
		{Base: base, AttemptTimeout: time.Hour},
		{Base: base, HeaderTimeout: time.Hour},
		{Base: base, Breaker: countingBreaker(t), AttemptTimeout: time.Hour, HeaderTimeout: time.Hour},
	} {
		tr, err := ramparthttp.NewTransport(cfg)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(get())
		require.NoError(t, err)
		assert.Equal(t, http.NoBody, resp.Body)
		assert.ErrorIs(t, attempt.Err(), context.Canceled)
	}
}

// The body's own Close runs while the attempt's context is alive: a body
// whose Close needs its request's context (to drain, to release a
// connection, to report) does not find it cancelled by the wrapper in
// front of it, whether the body was read to its end first or not.
func TestBody_HT13_BodyClosesBeforeItsContextEnds(t *testing.T) {
	for _, readAll := range []bool{false, true} {
		var atClose []error
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			body := &funcBody{Reader: strings.NewReader("hello"), close: func() error {
				atClose = append(atClose, req.Context().Err())
				return nil
			}}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: body, Request: req}, nil
		})
		tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Base: base, Breaker: countingBreaker(t), AttemptTimeout: time.Hour, HeaderTimeout: time.Hour})
		require.NoError(t, err)
		resp, err := tr.RoundTrip(get())
		require.NoError(t, err)
		if readAll {
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, "hello", string(b))
			require.NoError(t, resp.Request.Context().Err(), "read to its end, the body is not closed yet")
		}
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, []error{nil}, atClose, "read to its end first: %v", readAll)
		assert.ErrorIs(t, resp.Request.Context().Err(), context.Canceled)
	}
}

// funcBody is a body whose Close calls close.
type funcBody struct {
	io.Reader
	close func() error
}

func (b *funcBody) Close() error { return b.close() }

// The wrapper hides no method the caller needs: io.Copy and
// bytes.Buffer.ReadFrom read it with Read (it has no WriteTo, so that the
// end of the body is always seen by the wrapper), and the breaker judges
// the body at its end, before Close: a HalfOpen probe read to its end
// frees the probe slot for the next request.
func TestBody_HT13_CopyToTheEndJudgesTheBody(t *testing.T) {
	counter := &observetest.Counter{}
	br, err := circuitbreaker.New(circuitbreaker.Config{Observer: counter})
	require.NoError(t, err)
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader([]byte("a body of some length"))), Request: req}, nil
	})
	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Base: base, Breaker: br, AttemptTimeout: time.Hour})
	require.NoError(t, err)
	resp, err := tr.RoundTrip(get())
	require.NoError(t, err)
	var buf bytes.Buffer
	n, err := io.Copy(&buf, resp.Body)
	require.NoError(t, err)
	assert.Equal(t, int64(len("a body of some length")), n)
	assert.Equal(t, map[string]int{"success": 1, "failure": 0, "ignored": 0, "rejected": 0}, counter.Outcomes(), "judged at the end, before Close")
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, map[string]int{"success": 1, "failure": 0, "ignored": 0, "rejected": 0}, counter.Outcomes(), "and once")
}

// writerToBody is a body with a method of its own beyond io.ReadCloser.
type writerToBody struct{ *bytes.Reader }

func (writerToBody) Close() error { return nil }

// A stack with nothing to hold in the body (no breaker, no timeout)
// returns the base's body as it was, with all its methods, also for a
// retried attempt, whose context is not the request's.
func TestBody_HT13_NoWrapperWithoutALayerThatNeedsOne(t *testing.T) {
	calls := 0
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		calls++
		status := http.StatusOK
		if calls == 1 {
			status = http.StatusServiceUnavailable
		}
		return &http.Response{StatusCode: status, Header: http.Header{}, Body: writerToBody{bytes.NewReader([]byte("x"))}, Request: req}, nil
	})
	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Backoff: noBackoff}})
	require.NoError(t, err)
	resp, err := tr.RoundTrip(get())
	require.NoError(t, err)
	require.Equal(t, 2, calls)
	assert.IsType(t, writerToBody{}, resp.Body)
	require.NoError(t, resp.Body.Close())
}
