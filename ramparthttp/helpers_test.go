package ramparthttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
)

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

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

// down answers every request 503, in memory.
type down struct{ sent int }

func (d *down) RoundTrip(req *http.Request) (*http.Response, error) {
	d.sent++
	return &http.Response{
		StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req,
	}, nil
}

// countingBreaker returns a breaker whose counters report every call and
// failure of its Closed period (a window of 100 calls, judged when full).
func countingBreaker(t *testing.T) *circuitbreaker.Breaker {
	t.Helper()
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.FailureRate{}})
	require.NoError(t, err)
	return br
}

// TestMain fails the package if any test leaves a goroutine behind: the
// client stack hands contexts to response bodies and retries with timers,
// and the server side must start none per request.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// breakerLayer returns ramparthttp.BreakerLayer(cfg), failing t on error.
func breakerLayer(t testing.TB, cfg ramparthttp.BreakerConfig) ramparthttp.Layer {
	t.Helper()
	l, err := ramparthttp.BreakerLayer(cfg)
	require.NoError(t, err)
	return l
}

// openFor returns the refusal of a breaker whose cool-down has
// retryAfter left, for ever: the breaker runs on a clock that stands
// still, so its OpenError.RetryAfter() is exactly retryAfter.
func openFor(retryAfter time.Duration) error {
	b, err := circuitbreaker.New(circuitbreaker.Config{
		Clock:    stoppedClock{},
		Policy:   circuitbreaker.Consecutive{Failures: 1},
		CoolDown: retryAfter,
	})
	if err != nil {
		panic(err)
	}
	p, _ := b.TryAcquire()
	p.Failure(errors.New("tripped"))
	_, err = b.TryAcquire()
	return err
}

// stoppedClock is a clock.Clock on which no time passes.
type stoppedClock struct{}

func (stoppedClock) Now() time.Time                              { return time.Unix(0, 0) }
func (stoppedClock) Monotonic() time.Duration                    { return 0 }
func (stoppedClock) AfterFunc(time.Duration, func()) clock.Timer { return stoppedTimer{} }

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return true }

// countingBudget is a retry budget that counts deposits and grants every
// withdrawal.
type countingBudget struct{ deposits atomic.Int32 }

func (b *countingBudget) Deposit()       { b.deposits.Add(1) }
func (b *countingBudget) Withdraw() bool { return true }

// countingServer answers every request with status and counts them.
func countingServer(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(status)
		io.WriteString(w, http.StatusText(status))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// pipeServer serves h with a real net/http server over in-memory
// connections (net.Pipe) and returns a real *http.Transport that dials it,
// whatever the URL's host. Inside a synctest bubble every wait on these
// connections is durable, so the server's and the client's timers run on
// the bubble's virtual clock and durations are exact. Everything is closed
// when the test ends.
func pipeServer(t *testing.T, h http.Handler) *http.Transport {
	t.Helper()
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	tr := &http.Transport{DialContext: l.dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
		<-served
	})
	return tr
}

// pipeListener hands the server end of each net.Pipe that dial makes.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	srv, cli := net.Pipe()
	select {
	case l.conns <- srv:
		return cli, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

func get() *http.Request { return httptest.NewRequest(http.MethodGet, "/", nil) }

// loopback serves /ok (200 with a body), /down (503) and /stall (headers,
// then a body that waits for the client to go away) on a real listener.
func loopback(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/stall":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			io.WriteString(w, "hello")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// cancelAfterHeaders sends a GET whose body stalls, cancels it once the
// headers are in, and counts the read that fails as the ignored call.
func cancelAfterHeaders(t *testing.T, c *http.Client, url string, got map[string]int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	cancel()
	_, err = io.ReadAll(resp.Body)
	require.ErrorIs(t, err, context.Canceled)
	resp.Body.Close()
	got["ignored"]++
}
