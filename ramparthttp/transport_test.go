package ramparthttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// memTransport answers every request in memory with the same 200
// response and an empty body (or body, if set), or with err, if set,
// allocating nothing, so that what a stack around it allocates is all
// the stack's.
type memTransport struct {
	resp http.Response
	body io.ReadCloser
	err  error
}

func (m *memTransport) RoundTrip(*http.Request) (*http.Response, error) {
	if m.err != nil {
		return nil, m.err
	}
	// The stack may have put a wrapper there.
	if m.resp.Body = m.body; m.body == nil {
		m.resp.Body = eofBody{}
	}
	return &m.resp, nil
}

// eofBody is a body at its end; a zero-size value, it allocates nothing
// when stored in an interface.
type eofBody struct{}

func (eofBody) Read([]byte) (int, error) { return 0, io.EOF }
func (eofBody) Close() error             { return nil }

// The allocations NewTransport's stack adds to a request, over calling
// the base RoundTripper directly (bench/README.md, Findings, has the same
// count against a loopback GET, where net/http adds 3 more under a
// cancelable context):
//   - retry + budget + breaker: 1, the wrapper of the response body, which
//     holds the breaker's permit until the body is read to its end or
//     closed (the retry layer and the budget allocate nothing);
//   - with an AttemptTimeout as well: 4 more, 5 in all: the deadline
//     context (context.WithDeadlineCause's timerCtx, its cancel func, and
//     its time.AfterFunc: the callback and the runtime timer: 4) and the
//     copy of the request that carries the attempt's context
//     (Request.WithContext), which holds the one body wrapper too: the
//     wrapper that cancels that context when the body is closed and
//     holds the breaker's permit (1);
//   - the same with an Observer: 5 (the attempt timeout's part of the
//     body wrapper, which tells it of a body the deadline ends, is made
//     with the transport);
//   - the same with a response without a body (http.NoBody): 5, the
//     context ended at once, the spare wrapper unused;
//   - the same with a transport error: 5, of which the breaker and the
//     retry layer allocate none;
//   - with a HeaderTimeout instead: 5 (the cancellable context and its
//     cancel func, the timer and its callback, and the request's copy
//     with the body wrapper; it was 7);
//   - with both timeouts: 12, each timeout's context (4 each), the header
//     timeout's registering as a child of the attempt's (the parent's
//     Done channel and its map of children: 3), and the request's copy
//     with the one body wrapper, which ends both (it was 15);
//   - a request the breaker refuses: none, with or without a timeout (the
//     permit is acquired into a local, and the timeout layer is below the
//     breaker);
//   - a 5xx response judged a failure: none (its StatusError is shared).
func TestTransport_AllocsOverBare(t *testing.T) {
	base := &memTransport{resp: http.Response{StatusCode: http.StatusOK, Header: http.Header{}}}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://mem.test/", nil)
	require.NoError(t, err)
	buf := make([]byte, 16)
	allocs := func(rt http.RoundTripper) float64 {
		return testing.AllocsPerRun(1000, func() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				if errors.Is(err, circuitbreaker.ErrOpen) || errors.Is(err, errAllocsRefused) {
					return
				}
				t.Fatal(err)
			}
			_, _ = resp.Body.Read(buf)
			_ = resp.Body.Close()
		})
	}
	bare := allocs(base)
	require.Zero(t, bare, "the in-memory transport allocates nothing")
	trip := func(t *testing.T, b *circuitbreaker.Breaker) *circuitbreaker.Breaker {
		for b.State().State != circuitbreaker.Open {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			p.Failure(errors.New("down"))
		}
		return b
	}
	open := func(t *testing.T) *circuitbreaker.Breaker {
		b, err := circuitbreaker.New(circuitbreaker.Config{CoolDown: time.Hour})
		require.NoError(t, err)
		return trip(t, b)
	}
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) ramparthttp.ClientConfig
		want float64
	}{
		{name: "retry+budget+breaker", want: 1, cfg: func(t *testing.T) ramparthttp.ClientConfig {
			return ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Budget: allocsBudget(t)}, Breaker: allocsBreaker(t)}
		}},
		{name: "retry+budget+breaker+AttemptTimeout", want: 5, cfg: func(t *testing.T) ramparthttp.ClientConfig {
			return ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Budget: allocsBudget(t)}, Breaker: allocsBreaker(t), AttemptTimeout: 10 * time.Second}
		}},
		{name: "AttemptTimeout, no body", want: 5, cfg: func(t *testing.T) ramparthttp.ClientConfig {
			empty := &memTransport{resp: http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}}, body: http.NoBody}
			return ramparthttp.ClientConfig{Base: empty, Retry: ramparthttp.RetryConfig{Budget: allocsBudget(t)}, Breaker: allocsBreaker(t), AttemptTimeout: 10 * time.Second}
		}},
		{name: "AttemptTimeout, transport error", want: 5, cfg: func(t *testing.T) ramparthttp.ClientConfig {
			b, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1000000}})
			require.NoError(t, err)
			failing := &memTransport{err: errAllocsRefused}
			return ramparthttp.ClientConfig{Base: failing, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}, Breaker: b, AttemptTimeout: 10 * time.Second}
		}},
		{name: "retry+budget+breaker+HeaderTimeout", want: 5, cfg: func(t *testing.T) ramparthttp.ClientConfig {
			return ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Budget: allocsBudget(t)}, Breaker: allocsBreaker(t), HeaderTimeout: 10 * time.Second}
		}},
		{name: "retry+budget+breaker+AttemptTimeout with an Observer", want: 5, cfg: func(t *testing.T) ramparthttp.ClientConfig {
			obs := observe.Func(func(context.Context, observe.Event) {})
			return ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Budget: allocsBudget(t)}, Breaker: allocsBreaker(t), AttemptTimeout: 10 * time.Second, Observer: obs}
		}},
		{name: "breaker+AttemptTimeout+HeaderTimeout", want: 12, cfg: func(t *testing.T) ramparthttp.ClientConfig {
			return ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Budget: allocsBudget(t)}, Breaker: allocsBreaker(t), AttemptTimeout: 10 * time.Second, HeaderTimeout: 10 * time.Second}
		}},
		{name: "refused", want: 0, cfg: func(t *testing.T) ramparthttp.ClientConfig {
			return ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Budget: allocsBudget(t)}, Breaker: open(t), AttemptTimeout: 10 * time.Second}
		}},
		{name: "refused by a group's breaker", want: 0, cfg: func(t *testing.T) ramparthttp.ClientConfig {
			g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{CoolDown: time.Hour}})
			require.NoError(t, err)
			trip(t, g.Breaker("mem.test"))
			return ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Budget: allocsBudget(t)}, Breakers: g}
		}},
		{name: "503 judged a failure", want: 0, cfg: func(t *testing.T) ramparthttp.ClientConfig {
			b, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1000000}})
			require.NoError(t, err)
			unavailable := &memTransport{resp: http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}}}
			return ramparthttp.ClientConfig{Base: unavailable, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}, Breaker: b}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := ramparthttp.NewTransport(tc.cfg(t))
			require.NoError(t, err)
			assert.Equal(t, tc.want, allocs(rt)-bare)
		})
	}
}

// errAllocsRefused is the error of a memTransport that fails every
// request, shared so that failing allocates nothing.
var errAllocsRefused = errors.New("connection refused")

func allocsBudget(t *testing.T) *budget.Budget {
	b, err := budget.New(budget.Config{})
	require.NoError(t, err)
	return b
}

func allocsBreaker(t *testing.T) *circuitbreaker.Breaker {
	b, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	return b
}

// The overhead of rampart's HTTP adapters against bare net/http, on
// loopback: the same GET through a bare *http.Transport and through
// NewTransport's full stack (retry with a budget, breaker, per-attempt
// timeout) around an identical *http.Transport; and the same handler bare
// and behind a Handler with a typical server stack. The difference of two
// rows is what rampart adds per request (bench/README.md records it).

// okBody is the body every benchmark handler answers.
var okBody = []byte("ok")

func okHandlerFunc(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(okBody) }

// BenchmarkOverheadClient measures a loopback GET, body read and closed,
// with each client stack. Every stack has its own keep-alive connection
// pool, warmed before the timed loop.
func BenchmarkOverheadClient(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(okHandlerFunc))
	defer srv.Close()
	stacks := []struct {
		name string
		rt   func(b *testing.B, base *http.Transport) http.RoundTripper
	}{
		{name: "bare", rt: func(_ *testing.B, base *http.Transport) http.RoundTripper { return base }},
		{name: "retry", rt: func(b *testing.B, base *http.Transport) http.RoundTripper {
			// budget.Always: no budget, said explicitly (left nil, the
			// transport would get a default budget of its own).
			return newTransport(b, ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Budget: budget.Always}})
		}},
		{name: "retry+budget+breaker", rt: func(b *testing.B, base *http.Transport) http.RoundTripper {
			return newTransport(b, ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Budget: newBenchBudget(b)}, Breaker: newBenchBreaker(b)})
		}},
		{name: "full", rt: func(b *testing.B, base *http.Transport) http.RoundTripper {
			return newTransport(b, ramparthttp.ClientConfig{
				Base:           base,
				Retry:          ramparthttp.RetryConfig{Budget: newBenchBudget(b)},
				Breaker:        newBenchBreaker(b),
				AttemptTimeout: 10 * time.Second,
			})
		}},
	}
	for _, s := range stacks {
		b.Run(s.name, func(b *testing.B) {
			base := &http.Transport{MaxIdleConnsPerHost: 4}
			defer base.CloseIdleConnections()
			client := &http.Client{Transport: s.rt(b, base)}
			get := func() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			get() // dial outside the timed loop
			b.ReportAllocs()
			for b.Loop() {
				get()
			}
		})
	}
}

// BenchmarkOverheadServer measures a handler called directly with a
// recorder (no network: the difference of the two rows is all Handler's),
// bare and behind a Handler with a rate limit, a concurrency limit and a
// timeout.
func BenchmarkOverheadServer(b *testing.B) {
	for _, s := range []struct {
		name string
		h    func(b *testing.B) http.Handler
	}{
		{name: "bare", h: func(*testing.B) http.Handler { return http.HandlerFunc(okHandlerFunc) }},
		{name: "empty", h: func(b *testing.B) http.Handler { return newBenchHandler(b, ramparthttp.ServerConfig{}) }},
		{name: "ratelimit+concurrency", h: func(b *testing.B) http.Handler {
			return newBenchHandler(b, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{rateLayer(b), concurrencyLayer(b)}})
		}},
		{name: "full", h: func(b *testing.B) http.Handler {
			to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			return newBenchHandler(b, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{rateLayer(b), concurrencyLayer(b), to}})
		}},
	} {
		b.Run(s.name, func(b *testing.B) {
			h := s.h(b)
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			w := &statusOnlyWriter{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				w.code = 0
				h.ServeHTTP(w, req)
				if w.code != http.StatusOK {
					b.Fatalf("status %d", w.code)
				}
			}
		})
	}
}

// statusOnlyWriter is the cheapest ResponseWriter: it keeps the status and
// drops the body, so that the server rows measure the handlers alone.
type statusOnlyWriter struct {
	header http.Header
	code   int
}

func (w *statusOnlyWriter) Header() http.Header { return w.header }
func (w *statusOnlyWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *statusOnlyWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

func newTransport(b *testing.B, cfg ramparthttp.ClientConfig) http.RoundTripper {
	rt, err := ramparthttp.NewTransport(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return rt
}

func newBenchBudget(b *testing.B) *budget.Budget {
	bu, err := budget.New(budget.Config{})
	if err != nil {
		b.Fatal(err)
	}
	return bu
}

func newBenchBreaker(b *testing.B) *circuitbreaker.Breaker {
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	if err != nil {
		b.Fatal(err)
	}
	return br
}

func newBenchHandler(b *testing.B, cfg ramparthttp.ServerConfig) http.Handler {
	h, err := ramparthttp.NewHandler(http.HandlerFunc(okHandlerFunc), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return h
}

func rateLayer(b *testing.B) ramparthttp.ServerLayer {
	l, err := ratelimit.NewLayer[ramparthttp.Exchange, struct{}](ratelimit.Config{Limiter: rate.NewLimiter(rate.Inf, 1), Mode: ratelimit.Refuse})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func concurrencyLayer(b *testing.B) ramparthttp.ServerLayer {
	lim, err := concurrency.New(1 << 20)
	if err != nil {
		b.Fatal(err)
	}
	l, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// A request to a server that never answers fails with a timeout whether or
// not the retry layer retried it: the retries' exhausted error answers
// Timeout() like the per-attempt timeout it wraps.
func TestTransport_RT11_TimeoutStaysATimeoutThroughRetries(t *testing.T) {
	for _, attempts := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("MaxAttempts %d", attempts), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done() // hangs until the attempt gives up
			}))
			defer srv.Close()
			noWait, err := retry.NewConstant(0)
			require.NoError(t, err)
			rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
				Base:           srv.Client().Transport,
				Retry:          ramparthttp.RetryConfig{MaxAttempts: attempts, Backoff: noWait},
				AttemptTimeout: 20 * time.Millisecond,
			})
			require.NoError(t, err)
			client := &http.Client{Transport: rt}

			resp, err := client.Get(srv.URL)
			if resp != nil {
				resp.Body.Close()
			}

			require.Error(t, err)
			assert.ErrorIs(t, err, timeout.ErrTimeout)
			assert.True(t, os.IsTimeout(err), "os.IsTimeout(%v)", err)
			var uerr *url.Error
			require.ErrorAs(t, err, &uerr)
			assert.True(t, uerr.Timeout(), "(*url.Error).Timeout()")
			var nerr net.Error
			require.ErrorAs(t, err, &nerr)
			assert.True(t, nerr.Timeout(), "net.Error's Timeout()")
			if attempts > 1 {
				var ex *retry.ExhaustedError
				require.True(t, errors.As(err, &ex), "the retries ran out: %v", err)
				assert.Equal(t, attempts, ex.Attempts)
				assert.ErrorIs(t, err, retry.ErrMaxAttempts)
			}
		})
	}
}

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

// An AdaptiveLimiter as ClientConfig.Limit takes a response that Classify
// judges a failure as a failed call, as the concurrency layer takes an
// error: a dependency answering 503 at once through an outage does not
// teach the limiter that it has become fast. It used to be taken as a
// success, so a second of 1ms 503s taught a 1ms baseline, and on recovery
// the 10ms calls looked ten times queued: the limit fell and refused 423
// of the calls of the next second (and, at 1000 calls a second after ten
// minutes of 503s, two in five calls for five seconds).
func TestNewTransport_LM14_AFastFailureResponseIsNoLatencySample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{Window: 50 * time.Millisecond})
		require.NoError(t, err)
		var down atomic.Bool
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			status, d := http.StatusOK, 10*time.Millisecond
			if down.Load() {
				status, d = http.StatusServiceUnavailable, time.Millisecond
			}
			time.Sleep(d)
			return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		c := newClient(t, ramparthttp.ClientConfig{Base: base, Limit: lim, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})
		// 4 callers for d: how many of their calls the limit refused.
		calls := func(d time.Duration) int32 {
			var refused atomic.Int32
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for end := time.Now().Add(d); time.Now().Before(end); {
						resp, err := c.Get("http://dep/")
						if err != nil {
							refused.Add(1)
							time.Sleep(time.Millisecond)
							continue
						}
						_ = resp.Body.Close()
					}
				})
			}
			wg.Wait()
			return refused.Load()
		}
		require.Equal(t, int32(0), calls(time.Second))
		require.Equal(t, 10*time.Millisecond, lim.Baseline())
		down.Store(true)
		require.Equal(t, int32(0), calls(time.Second))
		assert.Equal(t, 10*time.Millisecond, lim.Baseline(), "503s answered in 1ms lower nothing")
		assert.Equal(t, 20, lim.Limit())
		down.Store(false)
		assert.Equal(t, int32(0), calls(time.Second), "the recovered dependency is not taken for a queued one")
		assert.Equal(t, 20, lim.Limit())
	})
}

// ClientConfig.Observer is told, under ClientConfig.Name, of the attempts
// the limit refuses, of a change of the limit, and of the attempts the
// attempt timeout ends, as rampartgrpc's is: what the callers got is what
// the metrics count.
func TestNewTransport_HT10_LimitAndTimeoutReportToTheObserver(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			entered <- struct{}{}
			<-release
		case 2:
			<-r.Context().Done() // until the attempt timeout ends it
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	lim, err := concurrency.New(1)
	require.NoError(t, err)
	var obs observetest.Recorder
	c := newClient(t, ramparthttp.ClientConfig{
		Limit:          lim,
		AttemptTimeout: 100 * time.Millisecond,
		Retry:          ramparthttp.RetryConfig{MaxAttempts: 1},
		Name:           "backend",
		Observer:       &obs,
	})
	first := make(chan error)
	go func() {
		resp, err := c.Get(srv.URL)
		if err == nil {
			err = resp.Body.Close()
		}
		first <- err
	}()
	<-entered
	_, err = c.Get(srv.URL)
	require.ErrorIs(t, err, concurrency.ErrLimited)
	close(release)
	require.NoError(t, <-first)
	require.NoError(t, lim.SetMax(2))
	_, err = c.Get(srv.URL)
	require.ErrorIs(t, err, timeout.ErrTimeout)

	var got []string
	for _, e := range obs.Events() {
		got = append(got, fmt.Sprintf("%s %s %s", e.Source, e.Name, e.Kind))
	}
	assert.Equal(t, []string{"concurrency backend refused", "concurrency backend tuned", "timeout backend timeout-fired"}, got)
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

// A client layer given a nil inner service fails each call with an error
// matching rampart.ErrNilService that names the layer, instead of panicking.
func TestLayers_WrapNilFailsEachCall(t *testing.T) {
	rl, err := ramparthttp.RetryLayer(ramparthttp.RetryConfig{})
	require.NoError(t, err)
	hl, err := ramparthttp.HedgeLayer(ramparthttp.HedgeConfig{Budget: budget.Always})
	require.NoError(t, err)
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	ht, err := ramparthttp.HeaderTimeoutLayer(time.Second)
	require.NoError(t, err)
	hosts, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		layer   ramparthttp.Layer
		wantErr string
	}{
		{name: "retry", layer: rl, wantErr: "ramparthttp: RetryLayer: Wrap: rampart: nil service"},
		{name: "hedge", layer: hl, wantErr: "ramparthttp: HedgeLayer: Wrap: rampart: nil service"},
		{name: "breaker", layer: breakerLayer(t, ramparthttp.BreakerConfig{Breaker: br}), wantErr: "ramparthttp: BreakerLayer: Wrap: rampart: nil service"},
		{name: "header timeout", layer: ht, wantErr: "ramparthttp: HeaderTimeoutLayer: Wrap: rampart: nil service"},
		{name: "group breaker", layer: breakerLayer(t, ramparthttp.BreakerConfig{Breakers: hosts}), wantErr: "ramparthttp: BreakerLayer: Wrap: rampart: nil service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := tc.layer.Wrap(nil)
			var resp *http.Response
			require.NotPanics(t, func() {
				resp, err = svc.Call(context.Background(), httptest.NewRequest(http.MethodGet, "http://backend/x", nil))
			})
			assert.Nil(t, resp)
			require.ErrorIs(t, err, rampart.ErrNilService)
			assert.EqualError(t, err, tc.wantErr)
		})
	}
}

// The message states the accepted values, zero (no timeout) included.
// ServerConfig's messages are checked in TestNewHandler_BadConfigNamesField.
func TestNewTransport_AttemptTimeoutMessageStatesAcceptedValues(t *testing.T) {
	_, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{AttemptTimeout: -time.Second})
	assert.EqualError(t, err, "ramparthttp: ClientConfig.AttemptTimeout must be >= 0 (0 means no per-attempt timeout), got -1s")
}

// A request Skip reports true for takes no probe slot: while the breaker is
// HalfOpen, skipped requests go through and the next other request is
// still admitted as the probe (a skipped request that took the slot
// without ever reporting would wedge the breaker).
func TestNewTransport_HT9_SkipTakesNoProbeSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second})
		require.NoError(t, err)
		p, err := br.TryAcquire()
		require.NoError(t, err)
		p.Failure(errors.New("tripped"))
		ft := &fakeTransport{statuses: []int{http.StatusOK}}
		c := newClient(t, ramparthttp.ClientConfig{
			Base:    ft,
			Skip:    func(r *http.Request) bool { return r.URL.Path == "/healthz" },
			Breaker: br,
		})
		time.Sleep(time.Second)
		for range 3 {
			resp, err := c.Get("http://backend/healthz")
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
		}
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: br.State().Cause}, br.State(), "skipped requests take no probe slot")
		resp, err := c.Get("http://backend/work")
		require.NoError(t, err, "the probe is admitted")
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, circuitbreaker.Closed, br.State().State)
		assert.Equal(t, 4, ft.calls)
	})
}
