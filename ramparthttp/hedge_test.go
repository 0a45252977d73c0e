package ramparthttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/ramparthttp"
)

const milli = time.Millisecond // short, for scripted latencies

// copyStep scripts one copy of a hedged request, in the order copies
// arrive at the replicaTransport.
type copyStep struct {
	latency   time.Duration // until the response headers
	status    int           // 0 means a transport error
	ignoreCtx bool          // answer even after cancellation
	noRetry   bool          // the answer carries Rampart-Retry: no
}

var errReplica = errors.New("replica: connection reset")

// replicaTransport answers each copy as its script says, in virtual time.
// It reads every request body it gets and returns bodies that read through
// the request's context, as net/http's do, and that record being closed.
type replicaTransport struct {
	steps []copyStep

	mu        sync.Mutex
	calls     int                // guarded by mu
	bodies    []string           // guarded by mu; the request body of each copy
	responses map[int]*replyBody // guarded by mu; by copy
}

func (f *replicaTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	k := f.calls
	f.calls++
	f.mu.Unlock()
	st := f.steps[k]

	var body string
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		body = string(b)
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()

	done := req.Context().Done()
	if st.ignoreCtx {
		done = nil
	}
	t := time.NewTimer(st.latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
		return nil, req.Context().Err()
	}
	if st.status == 0 {
		return nil, errReplica
	}
	rb := &replyBody{ctx: req.Context(), r: strings.NewReader(fmt.Sprintf("%d from copy %d", st.status, k))}
	f.mu.Lock()
	if f.responses == nil {
		f.responses = map[int]*replyBody{}
	}
	f.responses[k] = rb
	f.mu.Unlock()
	h := http.Header{}
	if st.noRetry {
		h.Set(ramparthttp.NoRetryHeader, "no")
	}
	return &http.Response{StatusCode: st.status, Header: h, Body: rb, Request: req}, nil
}

func (f *replicaTransport) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *replicaTransport) Bodies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bodies...)
}

// closed reports, for each copy that got a response, whether its body
// was closed.
func (f *replicaTransport) closed() map[int]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[int]bool{}
	for k, rb := range f.responses {
		m[k] = rb.closed.Load()
	}
	return m
}

// replyBody fails reads once its request's context is done.
type replyBody struct {
	ctx    context.Context
	r      io.Reader
	closed atomic.Bool
}

func (b *replyBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	return b.r.Read(p)
}

func (b *replyBody) Close() error { b.closed.Store(true); return nil }

// hedgedClient returns a client whose transport hedges after 10ms.
func hedgedClient(t *testing.T, ft *replicaTransport, b hedge.Budget) *http.Client {
	t.Helper()
	h, err := ramparthttp.HedgeLayer(ramparthttp.HedgeConfig{Budget: b, Delay: 10 * milli})
	require.NoError(t, err)
	svc := ramparthttp.NewBuilder().Layer(h).Service(ramparthttp.FromRoundTripper(ft))
	return &http.Client{Transport: ramparthttp.NewRoundTripper(svc)}
}

// getHedged sends a GET and returns the response, its body read to the end
// after RoundTrip returned, and how long the round trip took.
func getHedged(t *testing.T, c *http.Client) (*http.Response, string, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := c.Get("http://replicas/item")
	took := time.Since(start)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the body reads after RoundTrip returned")
	require.NoError(t, resp.Body.Close())
	return resp, string(b), took
}

func TestHedgeLayer_FastFailureDoesNotBeatSlowSuccess(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		ft := &replicaTransport{steps: []copyStep{{latency: 100 * milli, status: 200}, {latency: 5 * milli, status: 503}}}
		c := hedgedClient(t, ft, budget.Always)

		resp, body, took := getHedged(t, c)

		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "200 from copy 0", body)
		assert.Equal(t, 100*milli, took)
		assert.Equal(t, map[int]bool{0: true, 1: true}, ft.closed(), "the 503 closed by the layer; the 200 closed by the caller")
	})
}

func TestHedgeLayer_WinnerReadableAfterReturnLoserCancelled(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		ft := &replicaTransport{steps: []copyStep{{latency: time.Second, status: 200}, {latency: 5 * milli, status: 200}}}
		c := hedgedClient(t, ft, budget.Always)

		start := time.Now()
		resp, err := c.Get("http://replicas/item")
		require.NoError(t, err)
		assert.Equal(t, 15*milli, time.Since(start))
		time.Sleep(time.Minute) // the body is read long after RoundTrip returned
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, "200 from copy 1", string(b))
		assert.NoError(t, resp.Request.Context().Err(), "the winner's context lives until its body is closed")

		require.NoError(t, resp.Body.Close())
		assert.ErrorIs(t, resp.Request.Context().Err(), context.Canceled, "and ends with it")
		assert.Equal(t, map[int]bool{1: true}, ft.closed(), "copy 0 was cancelled before it answered")
	})
}

// Both copies of a PUT send the whole payload, each from its own GetBody
// copy, so they never share a reader (run with -race); the request's own
// body is closed unread.
func TestHedgeLayer_EachCopySendsItsOwnBody(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		ft := &replicaTransport{steps: []copyStep{{latency: 100 * milli, status: 200}, {latency: 5 * milli, status: 204}}}
		c := hedgedClient(t, ft, budget.Always)
		own := &watchedBody{Reader: strings.NewReader("payload")}
		req, err := http.NewRequest(http.MethodPut, "http://replicas/item", nil)
		require.NoError(t, err)
		req.Body = own
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("payload")), nil }

		resp, err := c.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())

		assert.Equal(t, 204, resp.StatusCode)
		assert.Equal(t, []string{"payload", "payload"}, ft.Bodies())
		assert.True(t, own.closed.Load(), "the request's own body is closed")
		assert.Zero(t, own.reads.Load(), "and never read")
	})
}

type watchedBody struct {
	io.Reader
	reads  atomic.Int32
	closed atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) { b.reads.Add(1); return b.Reader.Read(p) }
func (b *watchedBody) Close() error               { b.closed.Store(true); return nil }

func TestHedgeLayer_OnlyRequestsThatMayBeSentTwiceAreHedged(t *testing.T) {
	for _, tc := range []struct {
		name       string
		method     string
		key        string
		body       string
		noGetBody  bool
		wantHedged bool
	}{
		{name: "GET", method: http.MethodGet, wantHedged: true},
		{name: "HEAD", method: http.MethodHead, wantHedged: true},
		{name: "PUT with a replayable body", method: http.MethodPut, body: "payload", wantHedged: true},
		{name: "DELETE", method: http.MethodDelete, wantHedged: true},
		{name: "POST", method: http.MethodPost, body: "payload"},
		{name: "PATCH", method: http.MethodPatch, body: "payload"},
		{name: "POST with Idempotency-Key", method: http.MethodPost, key: "k-1", body: "payload", wantHedged: true},
		{name: "PUT whose body cannot be replayed", method: http.MethodPut, body: "payload", noGetBody: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ft := &replicaTransport{steps: []copyStep{{latency: 100 * milli, status: 200}, {latency: 5 * milli, status: 200}}}
				counter := budgettest.New(budgettest.Unlimited)
				c := hedgedClient(t, ft, counter)
				var body io.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
				}
				req, err := http.NewRequest(tc.method, "http://replicas/item", body)
				require.NoError(t, err)
				if tc.key != "" {
					req.Header.Set("Idempotency-Key", tc.key)
				}
				if tc.noGetBody {
					req.GetBody = nil
				}

				start := time.Now()
				resp, err := c.Do(req)
				require.NoError(t, err)
				took := time.Since(start)
				require.NoError(t, resp.Body.Close())

				if tc.wantHedged {
					assert.Equal(t, 15*milli, took)
					assert.Equal(t, 2, ft.Calls())
					assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 1}, counter.Counts())
				} else {
					assert.Equal(t, 100*milli, took)
					assert.Equal(t, 1, ft.Calls())
					assert.Equal(t, budgettest.Counts{}, counter.Counts(),
						"a request that is not hedged does not touch the budget")
				}
				want := []string{tc.body, tc.body}
				assert.Equal(t, want[:ft.Calls()], ft.Bodies(), "every copy sent the whole body")
			})
		})
	}
}

// A loser that answers after the winner, ignoring its cancellation, has
// its body closed before RoundTrip returns.
func TestHedgeLayer_LateLoserBodyClosed(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		ft := &replicaTransport{steps: []copyStep{{latency: 20 * milli, status: 200, ignoreCtx: true}, {latency: 5 * milli, status: 200}}}
		c := hedgedClient(t, ft, budget.Always)

		start := time.Now()
		resp, err := c.Get("http://replicas/item")
		require.NoError(t, err)

		assert.Equal(t, 20*milli, time.Since(start), "RoundTrip waits for the loser")
		assert.Equal(t, map[int]bool{0: true, 1: false}, ft.closed(), "the loser closed, the winner left to the caller")
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, "200 from copy 1", string(b))
		require.NoError(t, resp.Body.Close())
	})
}

// When every copy fails, the first failing response is returned as it is,
// readable, and the others are closed; with only transport errors, the
// error holds every copy's.
func TestHedgeLayer_NoGoodResponse(t *testing.T) {
	defer goleak.VerifyNone(t)
	t.Run("failing responses", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ft := &replicaTransport{steps: []copyStep{{latency: 30 * milli, status: 503}, {latency: 5 * milli, status: 500}}}
			c := hedgedClient(t, ft, budget.Always)

			resp, body, took := getHedged(t, c)

			assert.Equal(t, 500, resp.StatusCode)
			assert.Equal(t, "500 from copy 1", body)
			assert.Equal(t, 30*milli, took)
			assert.Equal(t, map[int]bool{0: true, 1: true}, ft.closed())
		})
	})
	t.Run("a transport error and a failing response", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ft := &replicaTransport{steps: []copyStep{{latency: 30 * milli, status: 429}, {latency: 5 * milli}}}
			c := hedgedClient(t, ft, budget.Always)

			resp, body, took := getHedged(t, c)

			assert.Equal(t, 429, resp.StatusCode)
			assert.Equal(t, "429 from copy 0", body)
			assert.Equal(t, 30*milli, took)
		})
	})
	t.Run("transport errors", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ft := &replicaTransport{steps: []copyStep{{latency: 30 * milli}, {latency: 5 * milli}}}
			c := hedgedClient(t, ft, budget.Always)

			resp, err := c.Get("http://replicas/item")

			assert.Nil(t, resp)
			var all *hedge.AllFailedError
			require.ErrorAs(t, err, &all)
			assert.Equal(t, []error{errReplica, errReplica}, all.Errs)
		})
	})
}

func TestHedgeLayer_BadConfigNamesTheField(t *testing.T) {
	var nilBudget *budget.Budget
	for _, tc := range []struct {
		name string
		cfg  ramparthttp.HedgeConfig
		want string
	}{
		{
			name: "no Budget",
			cfg:  ramparthttp.HedgeConfig{},
			want: "hedge: Budget must not be nil (every hedge must be bounded; a Budget whose Withdraw returns true removes the bound)",
		},
		{
			name: "nil *budget.Budget",
			cfg:  ramparthttp.HedgeConfig{Budget: nilBudget},
			want: "hedge: Budget must not be a nil pointer, got *budget.Budget(nil)",
		},
		{
			name: "Quantile in percent",
			cfg:  ramparthttp.HedgeConfig{Budget: budget.Always, Quantile: 95},
			want: "hedge: Quantile must be 0 (a fixed Delay) or a fraction in (0, 1] (0.95 for p95), got 95",
		},
		{
			name: "negative Delay",
			cfg:  ramparthttp.HedgeConfig{Budget: budget.Always, Delay: -milli},
			want: "hedge: Delay must be 0 (the default, 50ms) or positive, got -1ms",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ramparthttp.HedgeLayer(tc.cfg)
			assert.EqualError(t, err, tc.want)
			assert.Nil(t, l)
		})
	}
}

// A 503 that says "do not retry" (Rampart-Retry: no, PG5) ends the
// hedging: the third copy is not sent, and the first copy's 200 still
// wins (PG7). Without the header the third copy goes out at 20ms.
func TestHedgeLayer_PG7_NoRetryAnswerEndsTheHedging(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, noRetry := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			ft := &replicaTransport{steps: []copyStep{
				{latency: 100 * milli, status: 200},
				{latency: 0, status: 503, noRetry: noRetry},
				{latency: 200 * milli, status: 200},
			}}
			h, err := ramparthttp.HedgeLayer(ramparthttp.HedgeConfig{Budget: budget.Always, Delay: 10 * milli, MaxAttempts: 3})
			require.NoError(t, err)
			svc := ramparthttp.NewBuilder().Layer(h).Service(ramparthttp.FromRoundTripper(ft))
			c := &http.Client{Transport: ramparthttp.NewRoundTripper(svc)}

			resp, body, took := getHedged(t, c)

			assert.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, "200 from copy 0", body)
			assert.Equal(t, 100*milli, took)
			if noRetry {
				assert.Equal(t, 2, ft.Calls(), "no third copy after the 503 said no")
			} else {
				assert.Equal(t, 3, ft.Calls())
			}
		})
	}
}

// A copy whose transport panics makes the round trip panic on the
// caller's goroutine with a *rampart.PanicError, once the original has
// been cancelled and awaited, as a panic of the original's transport
// does; before, it ended the program from the copy's goroutine (hedge
// HG1).
func TestHedgeLayer_HG1_CopyPanicReachesTheCaller(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		ft := &replicaTransport{steps: []copyStep{{latency: time.Second, status: 200}}}
		var n atomic.Int32
		panicky := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if n.Add(1) == 2 {
				time.Sleep(5 * milli)
				panic("copy exploded")
			}
			return ft.RoundTrip(req)
		})
		h, err := ramparthttp.HedgeLayer(ramparthttp.HedgeConfig{Budget: budget.Always, Delay: 10 * milli})
		require.NoError(t, err)
		rt := ramparthttp.NewRoundTripper(ramparthttp.NewBuilder().Layer(h).Service(ramparthttp.FromRoundTripper(panicky)))
		req, err := http.NewRequest(http.MethodGet, "http://replicas/item", nil)
		require.NoError(t, err)

		start := time.Now()
		var recovered any
		func() {
			defer func() { recovered = recover() }()
			_, _ = rt.RoundTrip(req)
		}()

		pe, ok := recovered.(*rampart.PanicError)
		require.True(t, ok, "panic value %#v", recovered)
		assert.Equal(t, "copy exploded", pe.Value)
		assert.Contains(t, string(pe.Stack), "TestHedgeLayer_HG1_CopyPanicReachesTheCaller")
		assert.Equal(t, 15*milli, time.Since(start), "the original was cancelled at the panic and awaited")
		assert.Equal(t, 1, ft.Calls())
	})
}
