package ramparthttp_test

import (
	"context"
	"errors"
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

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
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

// hostOf returns the key HostBreakers uses for a server's URL.
func hostOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	return u.Host
}

// Two real servers, one failing: with HostBreakers the failing host's
// breaker opens after its 2 failures and rejects its next 3 requests
// unsent, while the 5 requests to the healthy host that follow are all
// sent and answered. With one shared Breaker, the same traffic stops the
// healthy host too.
func TestHostBreakers_HT7_OneBadHostDoesNotStopTheOthers(t *testing.T) {
	for _, tc := range []struct {
		name            string
		shared          bool
		wantGoodCalls   int32
		wantGoodOK      int
		wantGoodRefused int
	}{
		{name: "per host", wantGoodCalls: 5, wantGoodOK: 5},
		{name: "one shared breaker", shared: true, wantGoodCalls: 0, wantGoodOK: 0, wantGoodRefused: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad, badCalls := countingServer(t, http.StatusServiceUnavailable)
			good, goodCalls := countingServer(t, http.StatusOK)
			brCfg := circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Hour}
			cfg := ramparthttp.ClientConfig{Base: good.Client().Transport, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}}
			var hosts *circuitbreaker.Group[string]
			if tc.shared {
				br, err := circuitbreaker.New(brCfg)
				require.NoError(t, err)
				cfg.Breaker = br
			} else {
				var err error
				hosts, err = circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: brCfg})
				require.NoError(t, err)
				cfg.Breakers = hosts
			}
			c := newClient(t, cfg)

			var badOpen, goodOK, goodRefused int
			for range 5 {
				resp, err := c.Get(bad.URL)
				if errors.Is(err, circuitbreaker.ErrOpen) {
					badOpen++
				} else {
					require.NoError(t, err)
					resp.Body.Close()
				}
			}
			for range 5 {
				resp, err := c.Get(good.URL)
				if errors.Is(err, circuitbreaker.ErrOpen) {
					goodRefused++
					continue
				}
				require.NoError(t, err)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					goodOK++
				}
			}
			assert.Equal(t, int32(2), badCalls.Load(), "the bad host is called until its breaker opens")
			assert.Equal(t, 3, badOpen)
			assert.Equal(t, tc.wantGoodCalls, goodCalls.Load())
			assert.Equal(t, tc.wantGoodOK, goodOK)
			assert.Equal(t, tc.wantGoodRefused, goodRefused)
			if hosts == nil {
				return
			}
			states := map[string]circuitbreaker.State{}
			for _, s := range hosts.States() {
				states[s.Key] = s.State
			}
			assert.Equal(t, map[string]circuitbreaker.State{
				hostOf(t, bad.URL):  circuitbreaker.Open,
				hostOf(t, good.URL): circuitbreaker.Closed,
			}, states)
		})
	}
}

// The per-host path judges each attempt as the single-breaker path does:
// the same script of outcomes leaves the host's breaker with the same
// counters as one Breaker, with Config.Classify (here: 409 is a failure),
// 429 ignored, and a body whose read fails counted as a failure.
func TestHostBreakers_HT7_SameJudgementAsOneBreaker(t *testing.T) {
	script := []int{200, 409, 429, 500, 501, 0, -1} // 0: transport error; -1: 200 whose body read fails
	classify := func(resp *http.Response, err error) rampart.Outcome {
		if resp != nil && resp.StatusCode == http.StatusConflict {
			return rampart.Failure
		}
		return ramparthttp.Classify(resp, err)
	}
	run := func(t *testing.T, cfg ramparthttp.ClientConfig) {
		i := 0
		cfg.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			status := script[i]
			i++
			switch status {
			case 0:
				return nil, errTransport
			case -1:
				return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(failingReader{}), Request: r}, nil
			}
			return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		cfg.Classify = classify
		cfg.Retry = ramparthttp.RetryConfig{MaxAttempts: 1}
		c := newClient(t, cfg)
		for range script {
			resp, err := c.Get("http://backend/x")
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
	one := countingBreaker(t)
	run(t, ramparthttp.ClientConfig{Breaker: one})
	hosts, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Policy: circuitbreaker.FailureRate{}}})
	require.NoError(t, err)
	run(t, ramparthttp.ClientConfig{Breakers: hosts})

	want := circuitbreaker.Counts{Calls: 6, Failures: 4} // 409, 500, transport error, failed body; 429 not counted
	assert.Equal(t, want, one.State().Counts)
	states := hosts.States()
	require.Len(t, states, 1)
	assert.Equal(t, "backend", states[0].Key)
	assert.Equal(t, want, states[0].Counts)
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// GroupBreakerLayer with its own key: requests are grouped by the key, not
// the host. A nil group fails each call naming it, and the caller's done
// context adds no key.
func TestGroupBreakerLayer_HT7_KeyAndNilGroup(t *testing.T) {
	hosts, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
		Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour}})
	require.NoError(t, err)
	var sent atomic.Int32
	base := ramparthttp.FromRoundTripper(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: 500, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	}))
	byPath := func(r *http.Request) string { return r.URL.Path }
	svc := breakerLayer(t, ramparthttp.BreakerConfig{Breakers: hosts, BreakerKey: byPath}).Wrap(base)
	call := func(ctx context.Context, u string) error {
		resp, err := svc.Call(ctx, httptest.NewRequest(http.MethodGet, u, nil))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	require.NoError(t, call(context.Background(), "http://a/x"))
	assert.ErrorIs(t, call(context.Background(), "http://b/x"), circuitbreaker.ErrOpen, "same path, other host: same breaker")
	require.NoError(t, call(context.Background(), "http://a/y"))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, context.Canceled, call(cancelled, "http://a/z"))
	assert.Equal(t, int32(2), sent.Load())
	var keys []string
	for _, s := range hosts.States() {
		keys = append(keys, s.Key)
	}
	assert.Equal(t, []string{"/x", "/y"}, keys)

}

func TestNewTransport_HT7_BreakerAndHostBreakersIsAnError(t *testing.T) {
	br := countingBreaker(t)
	hosts, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{})
	require.NoError(t, err)
	_, err = ramparthttp.NewTransport(ramparthttp.ClientConfig{Breaker: br, Breakers: hosts})
	assert.EqualError(t, err, "ramparthttp: ClientConfig.Breaker and ClientConfig.Breakers must not both be set (one breaker for every host, or one per key)")
}

// A zero circuitbreaker.Group is a usable default group, given to
// Config.HostBreakers or to GroupBreakerLayer: a request to a real server
// goes through its host's breaker.
func TestHostBreakers_HT7_ZeroGroupIsDefaultGroup(t *testing.T) {
	srv, n := countingServer(t, http.StatusOK)
	host := hostOf(t, srv.URL)
	for _, tc := range []struct {
		name   string
		client func(g *circuitbreaker.Group[string]) *http.Client
	}{{
		name: "ClientConfig.Breakers",
		client: func(g *circuitbreaker.Group[string]) *http.Client {
			rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Breakers: g})
			require.NoError(t, err)
			return &http.Client{Transport: rt}
		},
	}, {
		name: "BreakerLayer",
		client: func(g *circuitbreaker.Group[string]) *http.Client {
			svc := ramparthttp.NewBuilder().Layer(breakerLayer(t, ramparthttp.BreakerConfig{Breakers: g})).Service(ramparthttp.FromRoundTripper(nil))
			return &http.Client{Transport: ramparthttp.NewRoundTripper(svc)}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var g circuitbreaker.Group[string]
			resp, err := tc.client(&g).Get(srv.URL)
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, []circuitbreaker.KeyState[string]{
				{Key: host, Snapshot: circuitbreaker.Snapshot{Name: host}},
			}, g.States())
		})
	}
	assert.Equal(t, int32(2), n.Load())
}

// TestBreakerLayer_CB7_PanickingJudgeFreesTheProbe checks, against a real
// server, that a panic in the classifier or in the breaker's IsFailure
// during a HalfOpen probe continues to the caller with its value and
// re-opens the breaker with the cause ErrPanicked: the probe slot is free
// for the next call at once (the cool-down is Immediate), not after the
// probe lease.
func TestBreakerLayer_CB7_PanickingJudgeFreesTheProbe(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(up.Close)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	down.Close() // connection refused

	panicky := func(*http.Response, error) rampart.Outcome { panic("judge exploded") }
	for _, tc := range []struct {
		name      string
		url       string
		classify  circuitbreaker.Classifier[*http.Response]
		isFailure func(error) bool
	}{
		{name: "classify on a response", url: up.URL, classify: panicky},
		{name: "classify on an error", url: down.URL, classify: panicky},
		{name: "IsFailure on an error", url: down.URL, isFailure: func(error) bool { panic("judge exploded") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br, err := circuitbreaker.New(circuitbreaker.Config{
				Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: circuitbreaker.Immediate,
				IsFailure: tc.isFailure,
			})
			require.NoError(t, err)
			p, err := br.TryAcquire()
			require.NoError(t, err)
			p.Failure(errTransport)
			svc := ramparthttp.NewBuilder().Layer(breakerLayer(t, ramparthttp.BreakerConfig{Breaker: br, Classify: tc.classify})).Service(ramparthttp.FromRoundTripper(nil))
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, tc.url, nil)
			require.NoError(t, err)

			assert.PanicsWithValue(t, "judge exploded", func() { _, _ = svc.Call(t.Context(), req) })
			assert.Equal(t, circuitbreaker.Snapshot{
				State: circuitbreaker.HalfOpen, Cause: circuitbreaker.ErrPanicked,
			}, br.State())
			p, err = br.TryAcquire()
			require.NoError(t, err, "the probe's slot is free")
			p.Ignore()
		})
	}
}

// A BreakerConfig with both or neither breaker is an error naming the
// fields.
func TestBreakerLayer_BadConfigNamesFields(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	_, err = ramparthttp.BreakerLayer(ramparthttp.BreakerConfig{})
	assert.EqualError(t, err, "ramparthttp: BreakerConfig needs a Breaker or Breakers, got neither")
	_, err = ramparthttp.BreakerLayer(ramparthttp.BreakerConfig{Breaker: br, Breakers: &circuitbreaker.Group[string]{}})
	assert.EqualError(t, err, "ramparthttp: BreakerConfig.Breaker and BreakerConfig.Breakers must not both be set (one breaker for every request, or one per key)")
}

// A HalfOpen probe whose body is never closed holds the probe slot for the
// body lease, not the breaker's minute-long ProbeLease: the requests in
// the meantime are refused, and then the probe counts as the success its
// headers were and the breaker closes.
func TestBreakerLayer_HT12_ProbeBodyLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second})
		require.NoError(t, err)
		p, err := br.TryAcquire()
		require.NoError(t, err)
		p.Failure(errors.New("tripped"))
		ft := &fakeTransport{statuses: []int{http.StatusOK}}
		svc := breakerLayer(t, ramparthttp.BreakerConfig{Breaker: br}).Wrap(ramparthttp.FromRoundTripper(ft))
		get := func() (*http.Response, error) {
			return svc.Call(t.Context(), httptest.NewRequest(http.MethodGet, "http://backend/", nil))
		}
		time.Sleep(time.Second)
		probe, err := get()
		require.NoError(t, err)
		assert.Equal(t, circuitbreaker.HalfOpen, br.State().State)
		_, err = get()
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen, "the probe's open body holds the slot")

		time.Sleep(ramparthttp.DefaultBodyLease - time.Nanosecond)
		_, err = get()
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen, "still within the lease")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, circuitbreaker.Closed, br.State().State, "the probe counted as a success")
		resp, err := get()
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.NoError(t, probe.Body.Close(), "closing after the lease changes nothing")
		assert.Equal(t, circuitbreaker.Closed, br.State().State)
		assert.Equal(t, 2, ft.calls)
	})
}

// A negative BodyLease is an error naming the field and the default.
func TestBreakerLayer_HT12_NegativeBodyLease(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	_, err = ramparthttp.BreakerLayer(ramparthttp.BreakerConfig{Breaker: br, BodyLease: -1})
	assert.EqualError(t, err, "ramparthttp: BreakerConfig.BodyLease must be >= 0 (0 means DefaultBodyLease, 5s), got -1ns")
	_, err = ramparthttp.NewTransport(ramparthttp.ClientConfig{Breaker: br, BodyLease: -1})
	assert.EqualError(t, err, "ramparthttp: ClientConfig.BodyLease must be >= 0 (0 means DefaultBodyLease, 5s), got -1ns")
}

// However the layers share the response body's wrapper (a breaker over an
// attempt timeout or under it, a header timeout as well, two breakers in
// one stack), a body read in part, closed twice and read after Close
// finishes each breaker's permit once, as a success (the read that fails
// because of the Close is not the server's failure), and ends the
// attempt's context at the first Close, not before.
func TestBreakerLayer_CB8_BodyClosedTwiceIsJudgedOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layers []string // outermost first
	}{
		{"breaker over timeout", []string{"breaker", "timeout"}},
		{"timeout over breaker", []string{"timeout", "breaker"}},
		{"breaker over timeout over header timeout", []string{"breaker", "timeout", "header"}},
		{"two breakers over timeout", []string{"breaker", "breaker", "timeout"}},
		{"breaker, timeout, breaker", []string{"breaker", "timeout", "breaker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := rampart.NewBuilder[*http.Request, *http.Response]()
			var counters []*observetest.Counter
			for _, l := range tc.layers {
				switch l {
				case "breaker":
					c := &observetest.Counter{}
					counters = append(counters, c)
					br, err := circuitbreaker.New(circuitbreaker.Config{Observer: c})
					require.NoError(t, err)
					b = b.With(ramparthttp.BreakerLayer(ramparthttp.BreakerConfig{Breaker: br}))
				case "timeout":
					b = b.With(ramparthttp.TimeoutLayer(time.Hour))
				case "header":
					b = b.With(ramparthttp.HeaderTimeoutLayer(time.Hour))
				}
			}
			var attempt context.Context
			inner := &closingBody{r: strings.NewReader("hello")}
			svc, err := b.Build(rampart.ServiceFunc[*http.Request, *http.Response](func(ctx context.Context, req *http.Request) (*http.Response, error) {
				attempt = ctx
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: inner, Request: req}, nil
			}))
			require.NoError(t, err)
			resp, err := svc.Call(context.Background(), get())
			require.NoError(t, err)

			buf := make([]byte, 2)
			n, err := resp.Body.Read(buf)
			require.NoError(t, err)
			assert.Equal(t, "he", string(buf[:n]))
			none := map[string]int{"success": 0, "failure": 0, "ignored": 0, "rejected": 0}
			for _, c := range counters {
				assert.Equal(t, none, c.Outcomes(), "not judged before the body ends")
			}
			require.NoError(t, attempt.Err(), "the attempt's context lives until the body is closed")

			require.NoError(t, resp.Body.Close())
			assert.ErrorIs(t, attempt.Err(), context.Canceled, "the first Close ends the attempt's context")
			assert.NoError(t, resp.Body.Close())
			_, err = resp.Body.Read(buf)
			assert.ErrorIs(t, err, errReadAfterClose)
			once := map[string]int{"success": 1, "failure": 0, "ignored": 0, "rejected": 0}
			for i, c := range counters {
				assert.Equal(t, once, c.Outcomes(), "breaker %d", i)
			}
			assert.Equal(t, int32(2), inner.closes.Load(), "each Close reaches the body")
		})
	}
}

var errReadAfterClose = errors.New("read on closed body")

// closingBody counts its Close calls and fails a Read after one, as
// net/http's bodies do.
type closingBody struct {
	r      io.Reader
	closes atomic.Int32
}

func (b *closingBody) Read(p []byte) (int, error) {
	if b.closes.Load() > 0 {
		return 0, errReadAfterClose
	}
	return b.r.Read(p)
}

func (b *closingBody) Close() error { b.closes.Add(1); return nil }

// TestHost_NZ1_NilRequest: Host of a nil request, or of one without a
// URL, is the empty key, not a panic.
func TestHost_NZ1_NilRequest(t *testing.T) {
	assert.Equal(t, "", ramparthttp.Host(nil))
	assert.Equal(t, "", ramparthttp.Host(&http.Request{}))
	assert.Equal(t, "api.example:443", ramparthttp.Host(&http.Request{URL: &url.URL{Host: "api.example:443"}}))
}
