package ramparthttp_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/shadow"
	"github.com/rampart-go/rampart/sim"
)

// Over a real loopback server, the transport's recorder judges each
// attempt as its breaker does: a 503 is a failure (not the success its nil
// error would make it), a 429 is ignored, a retry is marked with its
// attempt, and a request the breaker refused is recorded as refused.
func TestRecordLayer_SM8_JudgesAsTheBreaker(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch n.Add(1) {
		case 1:
			w.WriteHeader(http.StatusOK)
		case 2:
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	var out bytes.Buffer
	rec, err := record.New(&out, record.Config{})
	require.NoError(t, err)
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Hour})
	require.NoError(t, err)
	rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
		Breaker:  br,
		Recorder: rec,
		Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Budget: budget.Always,
			Backoff:   retry.BackoffFunc(func(int, time.Duration) time.Duration { return 0 }),
			Retryable: func(resp *http.Response, err error) bool { return err != nil || resp.StatusCode >= 500 }},
	})
	require.NoError(t, err)
	client := &http.Client{Transport: rt}
	for range 4 {
		resp, err := client.Get(srv.URL)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}
	require.NoError(t, rec.Close())
	// 200; 429; 503, its retry 503 (trips), its retry refused; the third
	// request refused.
	tr := sim.NewTraceReader(strings.NewReader(out.String()), "trace")
	type line struct {
		outcome record.Outcome
		class   string
		attempt int
	}
	var got []line
	host := strings.TrimPrefix(srv.URL, "http://")
	for {
		e, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		assert.Equal(t, host, e.Key)
		got = append(got, line{e.Outcome, e.Class, e.Attempt})
	}
	assert.Equal(t, []line{
		{record.Success, "", 1},
		{record.Ignored, "", 1},
		{record.Failure, "response", 1},
		{record.Failure, "response", 2},
		{record.Refused, "open", 3},
		{record.Refused, "open", 1},
	}, got)
	assert.Equal(t, int32(4), n.Load(), "refused requests were not sent")
}

// A zero Recorder is refused with an error naming it, and nothing is
// sent; with retries on (the default 3 attempts), the refusal is not
// retried: it is the same on every attempt, and the budget keeps its
// credit.
func TestRecordLayer_SM8_ZeroRecorder(t *testing.T) {
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { sent.Add(1) }))
	defer srv.Close()
	for _, attempts := range []int{1, 3} {
		obs := &observetest.Recorder{}
		rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Recorder: &record.Recorder{}, Retry: ramparthttp.RetryConfig{MaxAttempts: attempts, Budget: budget.Always, Observer: obs}})
		require.NoError(t, err)
		_, err = (&http.Client{Transport: rt}).Get(srv.URL)
		assert.EqualError(t, err, `Get "`+srv.URL+`": record: Recorder must be made by New, got a zero Recorder`, "attempts %d", attempts)
		assert.ErrorIs(t, err, rampart.ErrNilService)
		assert.Empty(t, obs.Events(), "attempts %d: no retry, no retry loop", attempts)
		assert.Zero(t, sent.Load())
	}
}

// A server whose handler aborts mid-body (panic(http.ErrAbortHandler)
// after its headers and a first chunk are flushed: a crashing backend
// behind a streaming proxy) answers 200 and then cuts the body. The
// breaker counts each such response as a failure when its body read
// fails, and trips; the trace records the same failures, not the
// successes the headers looked like, and the shadow's candidate (the live
// breaker's configuration) trips with it. So a replay of this outage sees
// an outage, and the operator's counts (observer, trace, shadow) agree.
func TestRecordLayer_SM8_BodyCutMidwayIsAFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer srv.Close()
	var out bytes.Buffer
	rec, err := record.New(&out, record.Config{})
	require.NoError(t, err)
	var seen observetest.Counter
	bcfg := circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 3}, CoolDown: time.Hour}
	live := bcfg
	live.Observer = &seen
	br, err := circuitbreaker.New(live)
	require.NoError(t, err)
	sh, err := shadow.New(shadow.Config{Live: br, Candidates: []shadow.Candidate{{Name: "same", Breaker: bcfg}}})
	require.NoError(t, err)
	rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
		Breaker: br, Recorder: rec, Shadow: sh, Retry: ramparthttp.RetryConfig{MaxAttempts: 1},
	})
	require.NoError(t, err)
	client := &http.Client{Transport: rt}
	for range 3 {
		resp, err := client.Get(srv.URL)
		require.NoError(t, err, "the headers arrive")
		_, err = io.Copy(io.Discard, resp.Body)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		require.NoError(t, resp.Body.Close())
	}
	_, err = client.Get(srv.URL)
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	require.NoError(t, rec.Close())

	assert.Equal(t, map[string]int{"success": 0, "failure": 3, "ignored": 0, "rejected": 1}, seen.Outcomes())
	tr := sim.NewTraceReader(strings.NewReader(out.String()), "trace")
	var got []string
	for {
		e, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, string(e.Outcome)+"/"+e.Class)
	}
	assert.Equal(t, []string{"failure/error", "failure/error", "failure/error", "refused/open"}, got)
	// Replayed through the live configuration, the trace trips it as the
	// live breaker tripped.
	replayed, err := sim.Replay(sim.NewTraceReader(strings.NewReader(out.String()), "trace"), []sim.Candidate{{Name: "live", Breaker: &bcfg}}, sim.Config{})
	require.NoError(t, err)
	require.Len(t, replayed, 1)
	assert.Equal(t, [4]int{4, 3, 1, 1}, [4]int{replayed[0].Calls, replayed[0].Failed, replayed[0].Refused, replayed[0].Trips}, "replay: calls, failed, refused, trips")
	rs := sh.Results()
	require.Len(t, rs, 2)
	for _, r := range rs {
		assert.Equal(t, [4]int{4, 3, 1, 1}, [4]int{r.Calls, r.Failed, r.Refused, r.Trips}, r.Name+": calls, failed, refused, trips")
	}
}

// What judging the body costs: over the retry layer alone, a recorder
// adds two allocations per response with a body (the body's wrapper and
// the function that records the call when the body ends), a shadow of one
// candidate three (the wrapper, the function, and the candidates' permits
// it holds), both together four (one wrapper for both), and a response
// without a body costs the recorder one (the function, made before the
// body is looked at). Over a breaker, whose wrapper of the body the
// recorder and the shadow share, a recorder adds one, a shadow two, both
// three.
func TestRecordLayer_SM8_BodyJudgedAllocations(t *testing.T) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://mem.test/", nil)
	require.NoError(t, err)
	var br *circuitbreaker.Breaker
	allocs := func(base http.RoundTripper, rec *record.Recorder, sh *shadow.Shadow) float64 {
		rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Base: base, Retry: ramparthttp.RetryConfig{Budget: budget.Always}, Recorder: rec, Shadow: sh, Breaker: br})
		require.NoError(t, err)
		buf := make([]byte, 16)
		return testing.AllocsPerRun(1000, func() {
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			_, _ = resp.Body.Read(buf)
			_ = resp.Body.Close()
		})
	}
	rec, err := record.New(io.Discard, record.Config{Buffer: record.MaxBuffer})
	require.NoError(t, err)
	defer rec.Close()
	sh, err := shadow.New(shadow.Config{Candidates: []shadow.Candidate{{Name: "c"}}})
	require.NoError(t, err)
	withBody := &memTransport{resp: http.Response{StatusCode: http.StatusOK, Header: http.Header{}}}
	bare := allocs(withBody, nil, nil)
	assert.Equal(t, 2.0, allocs(withBody, rec, nil)-bare, "recorder")
	assert.Equal(t, 3.0, allocs(withBody, nil, sh)-bare, "shadow")
	assert.Equal(t, 4.0, allocs(withBody, rec, sh)-bare, "recorder and shadow")
	noBody := roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody}, nil
	})
	assert.Equal(t, 1.0, allocs(noBody, rec, nil)-allocs(noBody, nil, nil), "recorder, no body")

	br, err = circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	bare = allocs(withBody, nil, nil)
	require.Equal(t, 1.0, bare, "the breaker's wrapper of the body")
	assert.Equal(t, 1.0, allocs(withBody, rec, nil)-bare, "recorder over a breaker")
	assert.Equal(t, 2.0, allocs(withBody, nil, sh)-bare, "shadow over a breaker")
	assert.Equal(t, 3.0, allocs(withBody, rec, sh)-bare, "recorder and shadow over a breaker")
}

// The recorder and the shadow judge a body in the wrapper the breaker
// put there, which keeps a writable body writable (as judging in a
// wrapper of their own did not), and every one of them is told of the
// body's end once: the breaker, the shadow's candidate and the trace.
func TestRecordLayer_SM8_JudgedBodyStaysWritable(t *testing.T) {
	counter := &observetest.Counter{}
	br, err := circuitbreaker.New(circuitbreaker.Config{Observer: counter})
	require.NoError(t, err)
	var out bytes.Buffer
	rec, err := record.New(&out, record.Config{})
	require.NoError(t, err)
	sh, err := shadow.New(shadow.Config{Candidates: []shadow.Candidate{{Name: "c"}}})
	require.NoError(t, err)
	conn := &rwBody{Reader: strings.NewReader("data")}
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: conn, Request: req}, nil
	})
	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Base: base, Breaker: br, Recorder: rec, Shadow: sh})
	require.NoError(t, err)
	resp, err := tr.RoundTrip(get())
	require.NoError(t, err)
	w, ok := resp.Body.(io.Writer)
	require.True(t, ok, "the body stays writable, got %T", resp.Body)
	_, err = io.WriteString(w, "sent")
	require.NoError(t, err)
	assert.Equal(t, "sent", conn.written.String())
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "data", string(got))
	require.NoError(t, resp.Body.Close())
	require.NoError(t, rec.Close())
	assert.Equal(t, map[string]int{"success": 1, "failure": 0, "ignored": 0, "rejected": 0}, counter.Outcomes())
	rs := sh.Results()
	require.Len(t, rs, 1)
	assert.Equal(t, [2]int{1, 0}, [2]int{rs[0].Calls, rs[0].Failed}, "shadow: calls, failed")
	tr2 := sim.NewTraceReader(&out, "trace")
	var outcomes []record.Outcome
	for {
		e, err := tr2.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		outcomes = append(outcomes, e.Outcome)
	}
	assert.Equal(t, []record.Outcome{record.Success}, outcomes)
}

// rwBody is a writable body that is not a 101's.
type rwBody struct {
	*strings.Reader
	written bytes.Buffer
}

func (b *rwBody) Write(p []byte) (int, error) { return b.written.Write(p) }
func (*rwBody) Close() error                  { return nil }

// A server that sends 103 Early Hints and then a 503: the client stack
// judges the final status, never the informational one. The breaker, its
// observer and the trace each count failures, and the response the caller
// gets is the 503.
func TestRecordLayer_SM8_InformationalThenFailureIsAFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	var out bytes.Buffer
	rec, err := record.New(&out, record.Config{})
	require.NoError(t, err)
	var seen observetest.Counter
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Hour, Observer: &seen})
	require.NoError(t, err)
	rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Breaker: br, Recorder: rec, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})
	require.NoError(t, err)
	client := &http.Client{Transport: rt}
	for range 2 {
		resp, err := client.Get(srv.URL)
		require.NoError(t, err)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
	}
	require.NoError(t, rec.Close())
	assert.Equal(t, circuitbreaker.Open, br.State().State)
	assert.Equal(t, map[string]int{"success": 0, "failure": 2, "ignored": 0, "rejected": 0}, seen.Outcomes())
	assert.Equal(t, 2, strings.Count(out.String(), `"outcome":"failure","class":"response"`), out.String())
}

// A caller that gives up while reading a body (its context cancelled
// after the headers) and a request the client's own Limit refuses: the
// breaker counts the first as ignored and never sees the second; the
// trace has an ignored line and a refused one ("limited"); the shadow's
// candidate ignores the first and takes the second, refused below it, as
// an unknown outcome: the latest known, and none is known, since the
// first call's 200 headers were no verdict (its body was), so a failure,
// as a replay of the trace guesses. The live row counts it failed too
// (the caller got an error no breaker gave). The limit's refusal is one
// event to the client's observer.
func TestRecordLayer_SM8_CancelledBodyAndLimitRefusalAgree(t *testing.T) {
	srv := loopback(t)
	var out bytes.Buffer
	rec, err := record.New(&out, record.Config{})
	require.NoError(t, err)
	var breakerSeen observetest.Counter
	var clientSeen observetest.Recorder
	br, err := circuitbreaker.New(circuitbreaker.Config{CoolDown: time.Hour, Observer: &breakerSeen})
	require.NoError(t, err)
	sh, err := shadow.New(shadow.Config{Live: br, Candidates: []shadow.Candidate{{Name: "c"}}})
	require.NoError(t, err)
	lim, err := concurrency.New(1)
	require.NoError(t, err)
	rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Breaker: br, Recorder: rec, Shadow: sh, Limit: lim,
		Name: "client", Observer: &clientSeen, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})
	require.NoError(t, err)
	client := &http.Client{Transport: rt}
	cancelAfterHeaders(t, client, srv.URL+"/stall", map[string]int{})
	require.True(t, lim.TryAcquire(), "the only slot, taken elsewhere")
	_, err = client.Get(srv.URL + "/ok")
	require.ErrorIs(t, err, concurrency.ErrLimited)
	lim.Release()
	require.NoError(t, rec.Close())

	assert.Equal(t, map[string]int{"success": 0, "failure": 0, "ignored": 1, "rejected": 0}, breakerSeen.Outcomes())
	got := traceOutcomes(t, out.String())
	assert.Equal(t, []string{"ignored/canceled", "refused/limited"}, got)
	rs := sh.Results()
	require.Len(t, rs, 2)
	for _, r := range rs {
		assert.Equal(t, [4]int{2, 1, 1, 0}, [4]int{r.Calls, r.Ignored, r.Failed, r.Refused}, r.Name+": calls, ignored, failed, refused")
	}
	assert.Equal(t, 1, rs[1].Unknown, "the limit's refusal, guessed for the candidate")
	replayed, err := sim.Replay(sim.NewTraceReader(strings.NewReader(out.String()), "trace"), []sim.Candidate{{Name: "c", Breaker: &circuitbreaker.Config{}}}, sim.Config{})
	require.NoError(t, err)
	assert.Equal(t, [5]int{2, 1, 1, 0, 1}, [5]int{replayed[0].Calls, replayed[0].Ignored, replayed[0].Failed, replayed[0].Refused, replayed[0].Unknown}, "the replay of the trace guesses as the shadow did")
	require.Len(t, clientSeen.Events(), 1)
	assert.Equal(t, observe.Refused, clientSeen.Events()[0].Kind)
}

// traceOutcomes returns "outcome/class" of each entry of the trace a
// Recorder wrote, in order of start, as package sim reads them.
func traceOutcomes(t *testing.T, trace string) []string {
	t.Helper()
	tr := sim.NewTraceReader(strings.NewReader(trace), "trace")
	var got []string
	for {
		e, err := tr.Next()
		if err == io.EOF {
			return got
		}
		require.NoError(t, err)
		got = append(got, string(e.Outcome)+"/"+e.Class)
	}
}
