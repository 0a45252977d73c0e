package ramparthttp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/ramparthttp"
)

// trippedBreaker returns a breaker that is Open for an hour.
func trippedBreaker(t *testing.T) *circuitbreaker.Breaker {
	t.Helper()
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
	require.NoError(t, err)
	p, err := br.TryAcquire()
	require.NoError(t, err)
	p.Failure(errors.New("tripped"))
	return br
}

// A request Skip reports true for reaches a real server past an open
// breaker, and deposits nothing; every other request is refused unsent.
func TestNewTransport_HT9_SkipBypassesOpenBreaker(t *testing.T) {
	srv, n := countingServer(t, http.StatusOK)
	br := trippedBreaker(t)
	b := new(countingBudget)
	c := newClient(t, ramparthttp.ClientConfig{
		Skip:    func(r *http.Request) bool { return r.URL.Path == "/healthz" },
		Breaker: br,
		Retry:   ramparthttp.RetryConfig{Budget: b},
	})
	for range 3 {
		resp, err := c.Get(srv.URL + "/healthz")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, resp.Body.Close())
	}
	_, err := c.Get(srv.URL + "/work")
	assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
	assert.Equal(t, int32(3), n.Load(), "only the health checks were sent")
	assert.Equal(t, int32(1), b.deposits.Load(), "only the refused request deposited")
	assert.Equal(t, circuitbreaker.Open, br.State().State)
}

// A full client-side limit refuses an attempt unsent with a
// *concurrency.LimitedError; it is not retried, though the request may be
// and Retryable accepts every error, and the breaker does not count it.
func TestNewTransport_HT10_LimitRefusesUnsentAndUnretried(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	lim, err := concurrency.New(1)
	require.NoError(t, err)
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	require.NoError(t, err)
	c := newClient(t, ramparthttp.ClientConfig{
		Limit:   lim,
		Breaker: br,
		Retry: ramparthttp.RetryConfig{
			Budget:    budget.Always,
			Retryable: func(_ *http.Response, err error) bool { return err != nil },
		},
	})
	first := make(chan error)
	go func() {
		resp, err := c.Get(srv.URL)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		first <- err
	}()
	<-entered

	_, err = c.Get(srv.URL)
	assert.ErrorIs(t, err, concurrency.ErrLimited)
	var le *concurrency.LimitedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, time.Duration(0), le.RetryAfter(), "a Limiter cannot know when a slot frees")

	close(release)
	require.NoError(t, <-first)
	assert.Equal(t, int32(1), n.Load(), "the refused request was neither sent nor retried")
	assert.Equal(t, circuitbreaker.Closed, br.State().State, "one failure would have opened it")
	resp, err := c.Get(srv.URL)
	require.NoError(t, err, "the slot was given back")
	require.NoError(t, resp.Body.Close())
}

// ClientConfig.Hedge hedges through the transport against a real server:
// the first copy hangs, the hedge answers after the delay.
func TestNewTransport_HT11_Hedge(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // hangs until the hedge wins
			return
		}
		_, _ = io.WriteString(w, "hedge")
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, ramparthttp.ClientConfig{
		Hedge: &ramparthttp.HedgeConfig{Budget: budget.Always, Delay: 20 * time.Millisecond},
	})
	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, "hedge", string(body))
	assert.Equal(t, int32(2), n.Load())
}

// A nil Hedge is no hedging; a HedgeConfig without a Budget is an error, as
// in rampartgrpc; so is a nil pointer for Limit.
func TestNewTransport_HT11_BadHedgeAndLimitNamed(t *testing.T) {
	_, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Hedge: &ramparthttp.HedgeConfig{}})
	assert.EqualError(t, err, "ramparthttp: ClientConfig.Hedge: hedge: Budget must not be nil (every hedge must be bounded; a Budget whose Withdraw returns true removes the bound)")
	_, err = ramparthttp.NewTransport(ramparthttp.ClientConfig{Limit: (*concurrency.Limiter)(nil)})
	assert.EqualError(t, err, "ramparthttp: ClientConfig.Limit must not be a nil pointer, got *concurrency.Limiter(nil)")
}
