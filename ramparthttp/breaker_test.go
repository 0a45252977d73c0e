package ramparthttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/timeout"
)

// A server that sends good headers and then stalls its body trips the
// breaker: the body read that the attempt's timeout cuts off is the call's
// failure.
func TestBreakerLayer_CB8_StalledBodyIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute})
		require.NoError(t, err)
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: -1,
				Body: ctxBody{r.Context(), stallingReader{r}}}, nil
		})
		c := newClient(t, ramparthttp.ClientConfig{Base: rt, Breaker: br, AttemptTimeout: 100 * time.Millisecond,
			Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})

		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		assert.Equal(t, circuitbreaker.Closed, br.State().State, "the headers alone are not a verdict")
		_, err = io.ReadAll(resp.Body)
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		resp.Body.Close()
		st := br.State()
		assert.Equal(t, circuitbreaker.Open, st.State)
		assert.ErrorIs(t, st.Cause, timeout.ErrTimeout)
	})
}

// stallingReader blocks until its request's context ends.
type stallingReader struct{ r *http.Request }

func (s stallingReader) Read([]byte) (int, error) {
	<-s.r.Context().Done()
	return 0, context.Cause(s.r.Context())
}

func TestBreakerLayer_CB8_BodyEndOrEarlyCloseIsASuccess(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
	require.NoError(t, err)
	var next []int
	rt := roundTripFunc(func(*http.Request) (*http.Response, error) {
		status := next[0]
		next = next[1:]
		return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("hello"))}, nil
	})
	c := newClient(t, ramparthttp.ClientConfig{Base: rt, Breaker: br, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})
	get := func() *http.Response {
		resp, err := c.Get("http://backend/x")
		require.NoError(t, err)
		return resp
	}

	next = []int{503, 200, 503, 200, 503}
	get().Body.Close()
	assert.Equal(t, 1, br.State().Counts.ConsecutiveFailures)

	resp := get() // read to its end
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(body))
	assert.Equal(t, 0, br.State().Counts.ConsecutiveFailures, "a body read to its end is a success")
	resp.Body.Close()

	get().Body.Close()
	assert.Equal(t, 1, br.State().Counts.ConsecutiveFailures)
	get().Body.Close() // closed unread
	assert.Equal(t, 0, br.State().Counts.ConsecutiveFailures, "a body closed early is a success")

	get().Body.Close()
	assert.Equal(t, circuitbreaker.Closed, br.State().State)
	assert.Equal(t, 1, br.State().Counts.ConsecutiveFailures)
}

func TestBreakerLayer_CB8_BodyResetIsAFailure(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	require.NoError(t, err)
	reset := errors.New("connection reset by peer")
	rt := roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(io.MultiReader(strings.NewReader("par"), errReader{reset}))}, nil
	})
	c := newClient(t, ramparthttp.ClientConfig{Base: rt, Breaker: br, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})
	resp, err := c.Get("http://backend/x")
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, reset)
	resp.Body.Close()
	st := br.State()
	assert.Equal(t, circuitbreaker.Open, st.State)
	assert.ErrorIs(t, st.Cause, reset)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
