package ramparthttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
)

// headerTransport records the propagation headers of each request it is
// given and answers 503.
type headerTransport struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.seen = append(h.seen, req.Header.Clone())
	h.mu.Unlock()
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// Each attempt sends the time left before the caller's deadline, in
// grpc-timeout's format, the criticality and the attempt number; a
// context with none of them sends the request itself, unchanged.
func TestPropagate_PG1_EachAttemptSendsTimeLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &headerTransport{}
		backoff, err := retry.NewConstant(100 * time.Millisecond)
		require.NoError(t, err)
		rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
			Base:  ramparthttp.Propagate(base),
			Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Backoff: backoff, Budget: budget.Always},
		})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(rampart.WithCriticality(context.Background(), rampart.Critical), 250*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://b.test/", nil)
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Len(t, base.seen, 3)
		for i, want := range []struct{ timeout, attempt string }{{"250m", ""}, {"150m", "2"}, {"50m", "3"}} {
			assert.Equal(t, want.timeout, base.seen[i].Get(ramparthttp.TimeoutHeader), "attempt %d", i+1)
			assert.Equal(t, want.attempt, base.seen[i].Get(ramparthttp.AttemptHeader), "attempt %d", i+1)
			assert.Equal(t, "critical", base.seen[i].Get(ramparthttp.CriticalityHeader), "attempt %d", i+1)
		}
		assert.Empty(t, req.Header, "the caller's request is not modified")

		plain, err := http.NewRequest(http.MethodGet, "http://b.test/", nil)
		require.NoError(t, err)
		resp, err = ramparthttp.Propagate(base).RoundTrip(plain)
		require.NoError(t, err)
		assert.Same(t, plain, resp.Request, "nothing to propagate: the request itself is sent")
		assert.Empty(t, base.seen[3])
	})
}

// A request whose deadline has passed is not sent.
func TestPropagate_PG1_PastDeadlineNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &headerTransport{}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		time.Sleep(time.Millisecond)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://b.test/", nil)
		require.NoError(t, err)
		_, err = ramparthttp.Propagate(base).RoundTrip(req)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Empty(t, base.seen)
	})
}

// deadlineOf serves one request with header values through a Handler
// whose first layer is PropagatedLayer(cfg), and reports the handler's
// deadline as time from now (-1 for none), its criticality and attempt,
// and the status. It runs inside a synctest bubble, so times are exact.
func deadlineOf(t *testing.T, cfg ramparthttp.PropagateConfig, h http.Header) (left time.Duration, c rampart.Criticality, attempt, code int) {
	t.Helper()
	left = -1
	called := false
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called = true
		if d, ok := r.Context().Deadline(); ok {
			left = time.Until(d)
		}
		c = rampart.CriticalityOf(r.Context())
		attempt = rampart.AttemptOf(r.Context())
	})
	pl, err := ramparthttp.PropagatedLayer(cfg)
	require.NoError(t, err)
	hd, err := ramparthttp.NewHandler(next, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{pl}})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodGet, "http://a.test/", nil)
	r.Header = h
	w := httptest.NewRecorder()
	hd.ServeHTTP(w, r)
	if !called {
		left = -2
	}
	return left, c, attempt, w.Code
}

func trustAll(*http.Request) bool { return true }

// From a trusted peer, each header is honoured as PropagatedLayer's doc
// says; every hostile value has its documented treatment, and none gives
// a deadline later than MaxTimeout.
func TestPropagate_PG2_HostileHeaders(t *testing.T) {
	cfg := ramparthttp.PropagateConfig{Trusted: trustAll, MaxTimeout: 5 * time.Second}
	for _, tc := range []struct {
		name    string
		timeout []string
		left    time.Duration // -1: no deadline; -2: handler not called
		code    int
	}{
		{name: "missing", left: -1, code: 200},
		{name: "milliseconds", timeout: []string{"250m"}, left: 250 * time.Millisecond, code: 200},
		{name: "every unit", timeout: []string{"2S"}, left: 2 * time.Second, code: 200},
		{name: "microseconds", timeout: []string{"1500u"}, left: 1500 * time.Microsecond, code: 200},
		{name: "nanoseconds", timeout: []string{"7n"}, left: 7, code: 200},
		{name: "over the cap", timeout: []string{"1M"}, left: 5 * time.Second, code: 200},
		{name: "huge", timeout: []string{"99999999H"}, left: 5 * time.Second, code: 200},
		{name: "zero", timeout: []string{"0m"}, left: -2, code: 503},
		{name: "negative", timeout: []string{"-5m"}, left: -1, code: 200},
		{name: "not a number", timeout: []string{"soonm"}, left: -1, code: 200},
		{name: "no unit", timeout: []string{"250"}, left: -1, code: 200},
		{name: "unknown unit", timeout: []string{"250d"}, left: -1, code: 200},
		{name: "fraction", timeout: []string{"1.5S"}, left: -1, code: 200},
		{name: "nine digits", timeout: []string{"100000000m"}, left: -1, code: 200},
		{name: "inner space", timeout: []string{"25 0m"}, left: -1, code: 200},
		{name: "empty", timeout: []string{""}, left: -1, code: 200},
		{name: "repeated lines: shortest", timeout: []string{"3S", "100m"}, left: 100 * time.Millisecond, code: 200},
		{name: "comma list: shortest well-formed", timeout: []string{"bad, 400m ,2S"}, left: 400 * time.Millisecond, code: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := http.Header{}
				for _, v := range tc.timeout {
					h.Add(ramparthttp.TimeoutHeader, v)
				}
				left, _, _, code := deadlineOf(t, cfg, h)
				assert.Equal(t, tc.left, left)
				assert.Equal(t, tc.code, code)
			})
		})
	}
	t.Run("no cap", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := http.Header{ramparthttp.TimeoutHeader: {"99999999H"}}
			left, _, _, _ := deadlineOf(t, ramparthttp.PropagateConfig{Trusted: trustAll}, h)
			assert.Equal(t, time.Duration(-1), left, "too long for a Duration and no cap: no deadline")
			h = http.Header{ramparthttp.TimeoutHeader: {"30M"}}
			left, _, _, _ = deadlineOf(t, ramparthttp.PropagateConfig{Trusted: trustAll}, h)
			assert.Equal(t, 30*time.Minute, left)
		})
	})
}

// Criticality and attempt: honoured from trusted peers with the repeat and
// malformed rules; ignored, with the deadline, from anyone else.
func TestPropagate_PG2_TrustAndValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		trusted := ramparthttp.PropagateConfig{Trusted: trustAll, MaxTimeout: time.Second}
		for _, tc := range []struct {
			crit    []string
			attempt []string
			c       rampart.Criticality
			n       int
		}{
			{crit: []string{"critical"}, attempt: []string{"2"}, c: rampart.Critical, n: 2},
			{crit: []string{"Sheddable"}, attempt: []string{"1"}, c: rampart.Sheddable, n: 1},
			{crit: []string{"critical", "sheddable"}, attempt: []string{"2", "3"}, c: rampart.Sheddable, n: 3},
			{crit: []string{"urgent"}, attempt: []string{"0"}, c: rampart.DefaultCriticality, n: 0},
			{crit: []string{""}, attempt: []string{"-2", "+2", "12345", "x"}, c: rampart.DefaultCriticality, n: 0},
		} {
			h := http.Header{ramparthttp.CriticalityHeader: tc.crit, ramparthttp.AttemptHeader: tc.attempt}
			_, c, n, _ := deadlineOf(t, trusted, h)
			assert.Equal(t, tc.c, c, "%v", tc.crit)
			assert.Equal(t, tc.n, n, "%v", tc.attempt)
		}
		h := http.Header{ramparthttp.TimeoutHeader: {"1m"}, ramparthttp.CriticalityHeader: {"critical"}, ramparthttp.AttemptHeader: {"2"}}
		for _, cfg := range []ramparthttp.PropagateConfig{{}, {Trusted: func(*http.Request) bool { return false }}} {
			left, c, n, code := deadlineOf(t, cfg, h)
			assert.Equal(t, time.Duration(-1), left)
			assert.Equal(t, rampart.DefaultCriticality, c)
			assert.Zero(t, n)
			assert.Equal(t, 200, code)
		}
		_, err := ramparthttp.PropagatedLayer(ramparthttp.PropagateConfig{MaxTimeout: -1})
		assert.ErrorContains(t, err, "PropagateConfig.MaxTimeout must be >= 0")
	})
}

// Over real loopback HTTP, a handler whose caller gave up stops being
// worked on: the propagated deadline ends its context, and its work
// (a loop that checks the context) stops.
func TestPropagate_PG3_HandlerStopsWhenCallerGivesUp(t *testing.T) {
	var worked, stopped atomic.Int64
	stoppedBy := make(chan error, 1)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for r.Context().Err() == nil {
			worked.Add(1)
			time.Sleep(time.Millisecond)
		}
		stopped.Add(1)
		stoppedBy <- context.Cause(r.Context())
	})
	pl, err := ramparthttp.PropagatedLayer(ramparthttp.PropagateConfig{Trusted: trustAll, MaxTimeout: time.Minute})
	require.NoError(t, err)
	hd, err := ramparthttp.NewHandler(next, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{pl}})
	require.NoError(t, err)
	srv := httptest.NewServer(hd)
	defer srv.Close()

	client := &http.Client{Transport: ramparthttp.Propagate(srv.Client().Transport)}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	if err == nil {
		// The server's copy of the deadline may end the handler, and its
		// 503 arrive, just before the caller's own.
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	}
	select {
	case why := <-stoppedBy:
		assert.True(t, errors.Is(why, context.DeadlineExceeded) || errors.Is(why, context.Canceled), "%v", why)
	case <-time.After(30 * time.Second):
		t.Fatal("the handler is still working for a caller that gave up")
	}
	at := worked.Load()
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, at, worked.Load(), "no work after the handler stopped")
	assert.Equal(t, int64(1), stopped.Load())
}

// Without a connection to close (a proxy keeps it open), the propagated
// deadline alone ends the handler's context, at the caller's deadline.
func TestPropagate_PG3_DeadlineAloneStopsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ended time.Duration
		start := time.Now()
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			ended = time.Since(start)
		})
		pl, err := ramparthttp.PropagatedLayer(ramparthttp.PropagateConfig{Trusted: trustAll, MaxTimeout: time.Minute})
		require.NoError(t, err)
		hd, err := ramparthttp.NewHandler(next, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{pl}})
		require.NoError(t, err)
		r := httptest.NewRequest(http.MethodGet, "http://a.test/", nil)
		r.Header.Set(ramparthttp.TimeoutHeader, "300m")
		w := httptest.NewRecorder()
		hd.ServeHTTP(w, r)
		assert.Equal(t, 300*time.Millisecond, ended)
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	})
}

// chainHop is a loopback server that counts its requests and, unless
// down is nil, calls down through a client of its own that retries
// MaxAttempts 3 with no budget.
func chainHop(t *testing.T, count *atomic.Int64, down *httptest.Server, status int) *httptest.Server {
	t.Helper()
	var rt http.RoundTripper
	if down != nil {
		var err error
		rt, err = ramparthttp.NewTransport(ramparthttp.ClientConfig{
			Base:  ramparthttp.Propagate(down.Client().Transport),
			Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Backoff: zeroBackoff, Budget: budget.Always},
		})
		require.NoError(t, err)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count.Add(1)
		if down == nil {
			w.WriteHeader(status)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, down.URL, nil)
		if err != nil {
			w.WriteHeader(500)
			return
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
	})
	pl, err := ramparthttp.PropagatedLayer(ramparthttp.PropagateConfig{Trusted: trustAll, MaxTimeout: time.Minute})
	require.NoError(t, err)
	hd, err := ramparthttp.NewHandler(next, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{pl}})
	require.NoError(t, err)
	return httptest.NewServer(hd)
}

var zeroBackoff = retry.BackoffFunc(func(int, time.Duration) time.Duration { return 0 })

// Across real loopback hops (caller → A → B → C, each hop retrying up to
// 3 attempts, C always 503), a hop serving a retry does not retry its own
// downstream calls: C sees 1 + 3 × 2 = 7 attempts for the caller's one
// request, not 3 × 3 × 3 = 27.
func TestPropagate_PG4_RetriesDoNotMultiply(t *testing.T) {
	var a, b, c atomic.Int64
	srvC := chainHop(t, &c, nil, http.StatusServiceUnavailable)
	defer srvC.Close()
	srvB := chainHop(t, &b, srvC, 0)
	defer srvB.Close()
	srvA := chainHop(t, &a, srvB, 0)
	defer srvA.Close()
	rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
		Base:  ramparthttp.Propagate(srvA.Client().Transport),
		Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Backoff: zeroBackoff, Budget: budget.Always},
	})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, srvA.URL, nil)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, []int64{3, 5, 7}, []int64{a.Load(), b.Load(), c.Load()})
}

// A server whose limit refuses a request, with NoRetry set, answers 503
// with Rampart-Retry: no, and rampart's retry layer makes no other
// attempt; without NoRetry the client retries.
func TestPropagate_PG5_NoRetryObeyed(t *testing.T) {
	for _, noRetry := range []bool{true, false} {
		lim, err := concurrency.New(1)
		require.NoError(t, err)
		require.True(t, lim.TryAcquire()) // the only slot is taken
		cl, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
		require.NoError(t, err)
		pl, err := ramparthttp.PropagatedLayer(ramparthttp.PropagateConfig{NoRetry: noRetry})
		require.NoError(t, err)
		var served atomic.Int64
		hd, err := ramparthttp.NewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ramparthttp.ServerConfig{
			Layers: []ramparthttp.ServerLayer{
				rampart.LayerFunc[ramparthttp.Exchange, struct{}](func(inner ramparthttp.ServerService) ramparthttp.ServerService {
					return rampart.ServiceFunc[ramparthttp.Exchange, struct{}](func(ctx context.Context, x ramparthttp.Exchange) (struct{}, error) {
						served.Add(1)
						return inner.Call(ctx, x)
					})
				}),
				pl, cl,
			},
		})
		require.NoError(t, err)
		srv := httptest.NewServer(hd)
		rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
			Base:  srv.Client().Transport,
			Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Backoff: zeroBackoff, Budget: budget.Always},
		})
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		srv.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		if noRetry {
			assert.Equal(t, "no", resp.Header.Get(ramparthttp.NoRetryHeader))
			assert.Equal(t, int64(1), served.Load())
		} else {
			assert.Empty(t, resp.Header.Get(ramparthttp.NoRetryHeader))
			assert.Equal(t, int64(3), served.Load())
		}
	}
}
