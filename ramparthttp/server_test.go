package ramparthttp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/filter"
	"github.com/rampart-go/rampart/inspect"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/timeout"
)

// An adaptive concurrency limit protects a server through the same layer
// as the fixed one: a request finding its slots taken is answered 503 at
// once, with a Retry-After from the refusal's delay, the limiter's latest
// average latency (1.5s, rounded up to 2 whole seconds).
func TestHandler_LM9_AdaptiveLimitRefusesWithItsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: 1, MaxLimit: 1, Window: time.Second})
		require.NoError(t, err)
		layer, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
		require.NoError(t, err)
		release := make(chan struct{})
		h, err := ramparthttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hold" {
				<-release
				return
			}
			time.Sleep(1500 * time.Millisecond)
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{layer}, RetryAfter: 5 * time.Second})
		require.NoError(t, err)
		serveOne := func(path string) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			return rec
		}

		for range 10 { // a window of ten 1.5s requests, closed by the tenth
			require.Equal(t, http.StatusOK, serveOne("/").Code)
		}
		require.Equal(t, 1500*time.Millisecond, lim.Baseline())

		held := make(chan int)
		go func() { held <- serveOne("/hold").Code }()
		synctest.Wait()
		start := time.Now()
		rec := serveOne("/")
		assert.Equal(t, time.Duration(0), time.Since(start))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, "2", rec.Header().Get("Retry-After"))
		close(release)
		assert.Equal(t, http.StatusOK, <-held)
	})
}

// A handler that sets the headers of an answer and then gives up: the 503
// must carry none of them, only what was set outside the Handler.
func TestHandler_TO1_RefusalDropsHeadersOfUnwrittenAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: time.Second})
		require.NoError(t, err)
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "req-7", w.Header().Get("X-Request-Id"), "the handler sees outer headers")
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Cache-Control", "public, max-age=86400")
			w.Header().Set("Set-Cookie", "s=1")
			w.Header().Set("Retry-After", "600")
			w.Header().Del("X-Request-Id")
			<-r.Context().Done()
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{to}, RetryAfter: 2 * time.Second})

		rec := httptest.NewRecorder()
		rec.Header().Set("X-Request-Id", "req-7") // set by an outer middleware
		h.ServeHTTP(rec, get())

		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, http.Header{
			"X-Request-Id":           {"req-7"},
			"Retry-After":            {"2"},
			"Content-Type":           {"text/plain; charset=utf-8"},
			"X-Content-Type-Options": {"nosniff"},
		}, rec.Header())
	})
}

func TestHandler_HeadersOfWrittenAnswerAreSent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(w http.ResponseWriter)
	}{
		{name: "nothing written", write: func(http.ResponseWriter) {}},
		{name: "WriteHeader", write: func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) }},
		{name: "Write", write: func(w http.ResponseWriter) { _, _ = w.Write([]byte("x")) }},
		{name: "Flush", write: func(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "no-store")
				w.Header().Del("X-Outer")
				tc.write(w)
			}), ramparthttp.ServerConfig{})
			rec := httptest.NewRecorder()
			rec.Header().Set("X-Outer", "1")
			h.ServeHTTP(rec, get())
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
			assert.Empty(t, rec.Header().Values("X-Outer"), "the handler may delete an outer header")
		})
	}
}

// The handler sees one header map throughout, as with net/http, so trailers
// set in a map it kept reach the client.
func TestHandler_TrailersThroughAKeptHeaderMap(t *testing.T) {
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Trailer", "X-Sum")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("body"))
		hdr.Set("X-Sum", "abc")
		hdr.Set(http.TrailerPrefix+"X-Late", "late")
	}), ramparthttp.ServerConfig{})
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.Header{"X-Sum": {"abc"}, "X-Late": {"late"}}, resp.Trailer)
}

// Headers a layer of the stack sets before the handler runs (a request ID,
// CORS) stay on a refusal; only the handler's own are dropped.
func TestHandler_LayerHeadersStayOnRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: time.Second})
		require.NoError(t, err)
		cors := ramparthttp.ServerLayer(rampart.LayerFunc[ramparthttp.Exchange, struct{}](func(inner ramparthttp.ServerService) ramparthttp.ServerService {
			return rampart.ServiceFunc[ramparthttp.Exchange, struct{}](func(ctx context.Context, x ramparthttp.Exchange) (struct{}, error) {
				x.Writer.Header().Set("Access-Control-Allow-Origin", "*")
				return inner.Call(ctx, x)
			})
		}))
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"))
			w.Header().Set("Cache-Control", "public")
			<-r.Context().Done()
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{cors, to}})

		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, get())
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
		assert.Empty(t, rec.Header().Values("Cache-Control"))
	})
}

// A handler that sends 103 Early Hints with the headers of its answer and
// then times out without answering: the hints reach the client, and the 503
// that follows carries none of the answer's headers, so a Go client reads
// its body (a leaked Content-Encoding: gzip would fail it with "gzip:
// invalid header").
func TestHandler_HT3_RefusalAfterInformationalDropsHandlerHeaders(t *testing.T) {
	to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: time.Millisecond})
	require.NoError(t, err)
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Set-Cookie", "s=1")
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		<-r.Context().Done()
	}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{to}})
	srv := httptest.NewServer(h)
	defer srv.Close()

	var hints []textproto.MIMEHeader
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, header textproto.MIMEHeader) error {
		if code == http.StatusEarlyHints {
			hints = append(hints, header)
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "Service Unavailable\n", string(body))
	assert.Empty(t, resp.Header.Values("Set-Cookie"))
	assert.Empty(t, resp.Header.Values("Link"))
	assert.Empty(t, resp.Header.Values("Content-Encoding"))
	require.Len(t, hints, 1)
	assert.Equal(t, "</style.css>; rel=preload", hints[0].Get("Link"), "the hints carry the headers set before them")
}

// After a 1xx the handler keeps its header map, as with net/http: the
// final answer it writes carries the headers set before the 1xx.
func TestHandler_HT3_AnswerAfterInformationalKeepsHandlerHeaders(t *testing.T) {
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, "page")
	}), ramparthttp.ServerConfig{})
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "page", string(body))
	assert.Equal(t, "</style.css>; rel=preload", resp.Header.Get("Link"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
}

// okHandler answers 200 "ok".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	_, _ = io.WriteString(w, "ok")
})

// failLayer is a layer whose service fails with err without calling the
// inner service.
func failLayer(err error) ramparthttp.ServerLayer {
	return rampart.LayerFunc[ramparthttp.Exchange, struct{}](func(ramparthttp.ServerService) ramparthttp.ServerService {
		return rampart.ServiceFunc[ramparthttp.Exchange, struct{}](func(context.Context, ramparthttp.Exchange) (struct{}, error) {
			return struct{}{}, err
		})
	})
}

// lateFailLayer is a layer whose service calls the inner service and then
// fails with err anyway.
func lateFailLayer(err error) ramparthttp.ServerLayer {
	return rampart.LayerFunc[ramparthttp.Exchange, struct{}](func(inner ramparthttp.ServerService) ramparthttp.ServerService {
		return rampart.ServiceFunc[ramparthttp.Exchange, struct{}](func(ctx context.Context, x ramparthttp.Exchange) (struct{}, error) {
			_, _ = inner.Call(ctx, x)
			return struct{}{}, err
		})
	})
}

func newServerHandler(t testing.TB, next http.Handler, cfg ramparthttp.ServerConfig) *ramparthttp.Handler {
	t.Helper()
	h, err := ramparthttp.NewHandler(next, cfg)
	require.NoError(t, err)
	return h
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// countingWriter records every status written, informational ones
// included, and the Retry-After header at the moment of the first final
// status, so a test can assert that exactly one response was written.
type countingWriter struct {
	header     http.Header
	codes      []int
	retryAfter string
	body       bytes.Buffer
}

func newCountingWriter() *countingWriter { return &countingWriter{header: make(http.Header)} }

func (w *countingWriter) Header() http.Header { return w.header }

func (w *countingWriter) WriteHeader(code int) {
	if code >= 200 && w.finals() == 0 {
		w.retryAfter = w.header.Get("Retry-After")
	}
	w.codes = append(w.codes, code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.finals() == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(p)
}

// finals counts final (non-1xx) statuses written.
func (w *countingWriter) finals() int {
	n := 0
	for _, c := range w.codes {
		if c >= 200 {
			n++
		}
	}
	return n
}

func TestHandler_RateLimitAnswers429WithExactRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One token every 2.5s, bucket of one.
		rl, err := ratelimit.NewLayer[ramparthttp.Exchange, struct{}](ratelimit.Config{Limiter: rate.NewLimiter(rate.Every(2500*time.Millisecond), 1), Mode: ratelimit.Refuse})
		require.NoError(t, err)
		h := newServerHandler(t, okHandler, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{rl}})

		rec := serve(h, get())
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.Empty(t, rec.Header().Get("Retry-After"))

		rec = serve(h, get())
		assert.Equal(t, http.StatusTooManyRequests, rec.Code)
		assert.Equal(t, "3", rec.Header().Get("Retry-After"), "2.5s rounds up to 3")
		assert.Equal(t, "Too Many Requests\n", rec.Body.String())

		time.Sleep(2 * time.Second)
		rec = serve(h, get())
		assert.Equal(t, http.StatusTooManyRequests, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"), "0.5s left rounds up to 1")

		time.Sleep(500 * time.Millisecond)
		rec = serve(h, get())
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "ok", rec.Body.String())
	})
}

func TestHandler_KeyedRateLimitPerClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 1, Burst: 1})
		require.NoError(t, err)
		rl, err := ratelimit.NewKeyedLayer[ramparthttp.Exchange, struct{}](k, ramparthttp.KeyHeader("X-Client"), ratelimit.Refuse)
		require.NoError(t, err)
		h := newServerHandler(t, okHandler, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{rl}})
		from := func(client string) *http.Request {
			r := get()
			r.Header.Set("X-Client", client)
			return r
		}

		assert.Equal(t, http.StatusOK, serve(h, from("a")).Code)
		rec := serve(h, from("a"))
		assert.Equal(t, http.StatusTooManyRequests, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		assert.Equal(t, http.StatusOK, serve(h, from("b")).Code, "b has its own bucket")
		time.Sleep(time.Second)
		assert.Equal(t, http.StatusOK, serve(h, from("a")).Code)
	})
}

// delayError is an error unknown to ramparthttp that asks to wait.
type delayError struct{ d time.Duration }

func (e delayError) Error() string             { return fmt.Sprintf("wait %v", e.d) }
func (e delayError) RetryAfter() time.Duration { return e.d }

func TestHandler_RetryAfterWholeSecondsRoundedUp(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		fallback time.Duration
		code     int
		want     string // "" means no header
	}{
		{name: "1ns", err: delayError{time.Nanosecond}, code: 503, want: "1"},
		{name: "999ms", err: delayError{999 * time.Millisecond}, code: 503, want: "1"},
		{name: "1s", err: delayError{time.Second}, code: 503, want: "1"},
		{name: "1.001s", err: delayError{1001 * time.Millisecond}, code: 503, want: "2"},
		{name: "ratelimit 2.5s", err: &ratelimit.LimitedError{Wait: 2500 * time.Millisecond}, code: 429, want: "3"},
		{name: "error's delay beats fallback", err: &ratelimit.LimitedError{Wait: 2500 * time.Millisecond}, fallback: 10 * time.Second, code: 429, want: "3"},
		{name: "ratelimit never", err: &ratelimit.LimitedError{Wait: rate.InfDuration}, fallback: time.Second, code: 429, want: ""},
		{name: "ratelimit zero, no fallback", err: &ratelimit.LimitedError{}, code: 429, want: ""},
		{name: "ratelimit zero, fallback", err: &ratelimit.LimitedError{}, fallback: 1500 * time.Millisecond, code: 429, want: "2"},
		{name: "breaker cool-down", err: openFor(4 * time.Second), fallback: time.Second, code: 503, want: "4"},
		{name: "breaker probes busy, fallback", err: &circuitbreaker.OpenError{}, fallback: 2 * time.Second, code: 503, want: "2"},
		{name: "breaker probes busy, no fallback", err: &circuitbreaker.OpenError{}, code: 503, want: ""},
		{name: "negative delay is none", err: delayError{-time.Second}, fallback: 0, code: 500, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newServerHandler(t, okHandler, ramparthttp.ServerConfig{
				Layers:     []ramparthttp.ServerLayer{failLayer(tt.err)},
				RetryAfter: tt.fallback,
			})
			rec := serve(h, get())
			assert.Equal(t, tt.code, rec.Code)
			got, ok := rec.Header()["Retry-After"]
			if tt.want == "" {
				assert.False(t, ok, "Retry-After = %q, want none", got)
			} else {
				assert.Equal(t, []string{tt.want}, got)
			}
		})
	}
}

func TestHandler_StatusForEachError(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		code       int
		retryAfter string // with ServerConfig.RetryAfter = 1s
	}{
		{name: "rate limited", err: fmt.Errorf("wrapped: %w", &ratelimit.LimitedError{Wait: 3 * time.Second}), code: 429, retryAfter: "3"},
		{name: "concurrency limit", err: &concurrency.LimitedError{}, code: 503, retryAfter: "1"},
		{name: "shed", err: loadshed.ErrOverloaded, code: 503, retryAfter: "1"},
		{name: "breaker open", err: openFor(5 * time.Second), code: 503, retryAfter: "5"},
		{name: "timeout", err: &timeout.Error{After: time.Second}, code: 503, retryAfter: "1"},
		{name: "deadline", err: fmt.Errorf("db: %w", context.DeadlineExceeded), code: 503, retryAfter: "1"},
		{name: "filter", err: filter.ErrRefused, code: 403, retryAfter: ""},
		{name: "unknown", err: errors.New("boom"), code: 500, retryAfter: ""},
		{name: "unknown caller cancellation seen by a layer", err: context.Canceled, code: 500, retryAfter: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var next atomic.Int32
			h := newServerHandler(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { next.Add(1) }), ramparthttp.ServerConfig{
				Layers:     []ramparthttp.ServerLayer{failLayer(tt.err)},
				RetryAfter: time.Second,
			})
			rec := serve(h, get())
			assert.Equal(t, tt.code, rec.Code)
			assert.Equal(t, http.StatusText(tt.code)+"\n", rec.Body.String(), "the body is the status text, never the error")
			assert.Equal(t, tt.retryAfter, rec.Header().Get("Retry-After"))
			assert.Equal(t, "text/plain; charset=utf-8", rec.Header().Get("Content-Type"))
			assert.Zero(t, next.Load())
		})
	}
}

func TestHandler_OnError(t *testing.T) {
	boom := errors.New("boom")
	t.Run("handled", func(t *testing.T) {
		h := newServerHandler(t, okHandler, ramparthttp.ServerConfig{
			Layers: []ramparthttp.ServerLayer{failLayer(boom)},
			OnError: func(w http.ResponseWriter, _ *http.Request, err error) bool {
				if !errors.Is(err, boom) {
					return false
				}
				http.Error(w, "teapot", http.StatusTeapot)
				return true
			},
		})
		rec := serve(h, get())
		assert.Equal(t, http.StatusTeapot, rec.Code)
		assert.Equal(t, "teapot\n", rec.Body.String())
	})
	t.Run("declined falls back to the default", func(t *testing.T) {
		var seen []error
		h := newServerHandler(t, okHandler, ramparthttp.ServerConfig{
			Layers:     []ramparthttp.ServerLayer{failLayer(loadshed.ErrOverloaded)},
			RetryAfter: 3 * time.Second,
			OnError: func(_ http.ResponseWriter, _ *http.Request, err error) bool {
				seen = append(seen, err)
				return false
			},
		})
		rec := serve(h, get())
		assert.Equal(t, []error{loadshed.ErrOverloaded}, seen)
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, "3", rec.Header().Get("Retry-After"))
	})
}

func TestHandler_NeverWritesSecondResponse(t *testing.T) {
	late := errors.New("late failure")
	var seen []error
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "made")
	}), ramparthttp.ServerConfig{
		Layers: []ramparthttp.ServerLayer{lateFailLayer(late)},
		OnError: func(w http.ResponseWriter, _ *http.Request, err error) bool {
			seen = append(seen, err)
			// Too late: both writes are discarded.
			w.WriteHeader(http.StatusInternalServerError)
			n, werr := io.WriteString(w, "oops")
			assert.Zero(t, n)
			assert.Error(t, werr)
			return false
		},
	})
	w := newCountingWriter()
	h.ServeHTTP(w, get())
	assert.Equal(t, []int{http.StatusCreated}, w.codes)
	assert.Equal(t, "made", w.body.String())
	assert.Equal(t, []error{late}, seen, "the error still reaches OnError")
}

func TestHandler_WriteHeaderAloneStartsTheResponse(t *testing.T) {
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{lateFailLayer(loadshed.ErrOverloaded)}})
	w := newCountingWriter()
	h.ServeHTTP(w, get())
	assert.Equal(t, []int{http.StatusNoContent}, w.codes)
}

func TestHandler_InformationalStatusDoesNotStartTheResponse(t *testing.T) {
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
	}), ramparthttp.ServerConfig{
		Layers:     []ramparthttp.ServerLayer{lateFailLayer(loadshed.ErrOverloaded)},
		RetryAfter: time.Second,
	})
	w := newCountingWriter()
	h.ServeHTTP(w, get())
	assert.Equal(t, []int{http.StatusEarlyHints, http.StatusServiceUnavailable}, w.codes)
	assert.Equal(t, "1", w.retryAfter)
}

func TestHandler_TO1_TimeoutWithoutAnswerIs503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: time.Second})
		require.NoError(t, err)
		var waited time.Duration
		h := newServerHandler(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			start := time.Now()
			<-r.Context().Done() // gives up without answering
			waited = time.Since(start)
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{to}, RetryAfter: 2 * time.Second})

		rec := serve(h, get())
		assert.Equal(t, time.Second, waited)
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, "2", rec.Header().Get("Retry-After"))
		assert.Equal(t, "Service Unavailable\n", rec.Body.String())
	})
}

func TestHandler_TO1_TimeoutErrorReachesOnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: time.Second})
		require.NoError(t, err)
		var seen error
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "99") // for an answer it never writes
			<-r.Context().Done()
		}), ramparthttp.ServerConfig{
			Layers:  []ramparthttp.ServerLayer{to},
			OnError: func(_ http.ResponseWriter, _ *http.Request, err error) bool { seen = err; return false },
		})
		rec := serve(h, get())
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.ErrorIs(t, seen, timeout.ErrTimeout)
		assert.ErrorIs(t, seen, context.DeadlineExceeded)
		assert.Empty(t, rec.Header().Get("Retry-After"), "no fallback configured")
	})
}

func TestHandler_TO1_LateAnswerIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: time.Second})
		require.NoError(t, err)
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			time.Sleep(2 * time.Second) // ignores its context, then answers
			_, _ = io.WriteString(w, "late but fine")
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{to}})
		w := newCountingWriter()
		h.ServeHTTP(w, get())
		assert.Equal(t, []int{http.StatusOK}, w.codes)
		assert.Equal(t, "late but fine", w.body.String())
	})
}

func TestHandler_TimeoutContextReachesHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: 3 * time.Second})
		require.NoError(t, err)
		var left time.Duration
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			deadline, ok := r.Context().Deadline()
			require.True(t, ok)
			left = time.Until(deadline)
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{to}})
		rec := serve(h, get())
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, 3*time.Second, left)
	})
}

// TestHandler_TO1_WaitForSlotBoundedByTimeout: a request queued behind a
// busy concurrency limit waits until the timeout layer's deadline, then is
// answered 503.
func TestHandler_TO1_WaitForSlotBoundedByTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: 2 * time.Second})
		require.NoError(t, err)
		lim, err := concurrency.New(1)
		require.NoError(t, err)
		ll, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Wait})
		require.NoError(t, err)
		release := make(chan struct{})
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hold" {
				<-release
			}
			_, _ = io.WriteString(w, "ok")
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{to, ll}, RetryAfter: time.Second})

		held := make(chan *httptest.ResponseRecorder)
		go func() { held <- serve(h, httptest.NewRequest(http.MethodGet, "/hold", nil)) }()
		synctest.Wait()
		require.Equal(t, 1, lim.InFlight())

		start := time.Now()
		rec := serve(h, get())
		assert.Equal(t, 2*time.Second, time.Since(start))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))

		close(release)
		assert.Equal(t, http.StatusOK, (<-held).Code, "the held request answered late keeps its answer")
	})
}

func TestHandler_ClientGoneGetsBareStatus(t *testing.T) {
	t.Run("refused by a layer", func(t *testing.T) {
		lim, err := concurrency.New(1)
		require.NoError(t, err)
		ll, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Wait})
		require.NoError(t, err)
		var seen error
		h := newServerHandler(t, okHandler, ramparthttp.ServerConfig{
			Layers:     []ramparthttp.ServerLayer{ll},
			RetryAfter: time.Second,
			OnError:    func(_ http.ResponseWriter, _ *http.Request, err error) bool { seen = err; return false },
		})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w := newCountingWriter()
		h.ServeHTTP(w, get().WithContext(ctx))
		assert.ErrorIs(t, seen, context.Canceled)
		assert.Equal(t, []int{http.StatusServiceUnavailable}, w.codes)
		assert.Empty(t, w.body.String())
		assert.Empty(t, w.retryAfter)
	})
	t.Run("handler gave up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		h := newServerHandler(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			cancel() // the client hangs up mid-request
			<-r.Context().Done()
		}), ramparthttp.ServerConfig{RetryAfter: time.Second})
		w := newCountingWriter()
		h.ServeHTTP(w, get().WithContext(ctx))
		assert.Equal(t, []int{http.StatusServiceUnavailable}, w.codes)
		assert.Empty(t, w.body.String())
		assert.Empty(t, w.retryAfter)
	})
}

func TestHandler_NoLayersPassesThrough(t *testing.T) {
	h := newServerHandler(t, okHandler, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{nil}})
	rec := serve(h, get())
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok", rec.Body.String())
}

func TestHandler_LayerMayReplaceRequestAndWriter(t *testing.T) {
	type key struct{}
	// A layer that adds a context value and upper-cases the body.
	upper := rampart.LayerFunc[ramparthttp.Exchange, struct{}](func(inner ramparthttp.ServerService) ramparthttp.ServerService {
		return rampart.ServiceFunc[ramparthttp.Exchange, struct{}](func(ctx context.Context, x ramparthttp.Exchange) (struct{}, error) {
			ctx = context.WithValue(ctx, key{}, "v")
			x.Request = x.Request.WithContext(ctx)
			x.Writer = upperWriter{x.Writer}
			return inner.Call(ctx, x)
		})
	})
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "value %v", r.Context().Value(key{}))
	}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{upper, lateFailLayer(loadshed.ErrOverloaded)}})
	w := newCountingWriter()
	h.ServeHTTP(w, get())
	assert.Equal(t, []int{http.StatusOK}, w.codes, "the wrapped writer's output still counts as begun")
	assert.Equal(t, "VALUE V", w.body.String())
}

type upperWriter struct{ http.ResponseWriter }

func (w upperWriter) Write(p []byte) (int, error) {
	return w.ResponseWriter.Write(bytes.ToUpper(p))
}

func TestHandler_WriterKeepsOptionalInterfaces(t *testing.T) {
	t.Run("flush", func(t *testing.T) {
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			f, ok := w.(http.Flusher)
			require.True(t, ok)
			f.Flush()
			require.NoError(t, http.NewResponseController(w).Flush())
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{lateFailLayer(loadshed.ErrOverloaded)}})
		rec := serve(h, get())
		assert.True(t, rec.Flushed)
		assert.Equal(t, http.StatusOK, rec.Code, "a flush starts the response; no 503 after it")
		assert.Empty(t, rec.Body.String())
	})
	t.Run("flush unsupported", func(t *testing.T) {
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			assert.ErrorIs(t, http.NewResponseController(w).Flush(), http.ErrNotSupported)
			_, _, err := http.NewResponseController(w).Hijack()
			assert.ErrorIs(t, err, http.ErrNotSupported)
			assert.ErrorIs(t, http.NewResponseController(w).SetWriteDeadline(time.Time{}), http.ErrNotSupported)
		}), ramparthttp.ServerConfig{
			Layers:     []ramparthttp.ServerLayer{lateFailLayer(loadshed.ErrOverloaded)},
			RetryAfter: time.Second,
		})
		w := newCountingWriter() // supports none of them
		h.ServeHTTP(w, get())
		assert.Equal(t, []int{http.StatusServiceUnavailable}, w.codes, "failed flush and hijack start nothing")
	})
	t.Run("read from", func(t *testing.T) {
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			rf, ok := w.(io.ReaderFrom)
			require.True(t, ok)
			n, err := rf.ReadFrom(strings.NewReader("copied"))
			assert.NoError(t, err)
			assert.Equal(t, int64(6), n)
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{lateFailLayer(loadshed.ErrOverloaded)}})
		w := newCountingWriter()
		h.ServeHTTP(w, get())
		assert.Equal(t, []int{http.StatusOK}, w.codes)
		assert.Equal(t, "copied", w.body.String())
	})
}

func TestHandler_HijackOverLoopback(t *testing.T) {
	defer goleak.VerifyNone(t)
	var seen atomic.Value
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hj, ok := w.(http.Hijacker)
		require.True(t, ok)
		conn, brw, err := hj.Hijack()
		require.NoError(t, err)
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
		_ = brw.Flush()
	}), ramparthttp.ServerConfig{
		Layers:  []ramparthttp.ServerLayer{lateFailLayer(loadshed.ErrOverloaded)},
		OnError: func(_ http.ResponseWriter, _ *http.Request, err error) bool { seen.Store(err); return false },
	})
	returned := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	<-returned // a hijacked connection is not tracked by srv.Close
	assert.Equal(t, loadshed.ErrOverloaded, seen.Load())
	srv.Client().CloseIdleConnections()
}

func TestHandler_EndToEndOverLoopback(t *testing.T) {
	defer goleak.VerifyNone(t)
	lim, err := concurrency.New(1)
	require.NoError(t, err)
	ll, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{ll}, RetryAfter: time.Second})
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()

	first := make(chan string)
	go func() {
		resp, err := client.Get(srv.URL)
		if err != nil {
			first <- err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		first <- fmt.Sprint(resp.StatusCode, " ", string(body))
	}()
	<-entered

	resp, err := client.Get(srv.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, "Service Unavailable\n", string(body))

	close(release)
	assert.Equal(t, "200 done", <-first)
}

// TestHandler_ConcurrencyLimitExact holds K requests in the handler until
// every other request has been refused, so the counts are exact.
func TestHandler_ConcurrencyLimitExact(t *testing.T) {
	const n, k = 40, 4
	lim, err := concurrency.New(k)
	require.NoError(t, err)
	ll, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	require.NoError(t, err)
	var inFlight, most atomic.Int32
	entered, gate := make(chan struct{}, n), make(chan struct{})
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		raise(&most, inFlight.Add(1))
		entered <- struct{}{}
		<-gate
		inFlight.Add(-1)
		_, _ = io.WriteString(w, "ok")
	}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{ll}, RetryAfter: time.Second})

	writers := make([]*countingWriter, n)
	refused := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i := range writers {
		writers[i] = newCountingWriter()
		wg.Go(func() {
			h.ServeHTTP(writers[i], get())
			if writers[i].finals() == 1 && writers[i].codes[0] == http.StatusServiceUnavailable {
				refused <- struct{}{}
			}
		})
	}
	for range k {
		<-entered
	}
	for range n - k {
		<-refused
	}
	close(gate)
	wg.Wait()

	codes := map[int]int{}
	for _, w := range writers {
		require.Equal(t, 1, w.finals(), "exactly one response per request: %v", w.codes)
		codes[w.codes[0]]++
		if w.codes[0] == http.StatusServiceUnavailable {
			assert.Equal(t, "1", w.retryAfter)
		}
	}
	assert.Equal(t, map[int]int{http.StatusOK: k, http.StatusServiceUnavailable: n - k}, codes)
	assert.Equal(t, int32(k), most.Load())
}

// TestHandler_HammerShedAndLimit runs many concurrent requests through the
// overload stack (shed outside a waiting limit) under -race.
func TestHandler_HammerShedAndLimit(t *testing.T) {
	const goroutines, perG, k = 32, 50, 3
	lim, layers := shedAndLimit(t, k)
	var inFlight, most, served atomic.Int32
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		raise(&most, inFlight.Add(1))
		for range 10 {
			runtime.Gosched()
		}
		inFlight.Add(-1)
		served.Add(1)
		_, _ = io.WriteString(w, "ok")
	}), ramparthttp.ServerConfig{Layers: layers, RetryAfter: time.Second})

	var ok, unavailable, other atomic.Int32
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perG {
				w := newCountingWriter()
				h.ServeHTTP(w, get())
				switch {
				case w.finals() != 1 || len(w.codes) != 1:
					other.Add(1)
				case w.codes[0] == http.StatusOK && w.body.String() == "ok":
					ok.Add(1)
				case w.codes[0] == http.StatusServiceUnavailable && w.retryAfter == "1":
					unavailable.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, other.Load(), "every request gets exactly one 200 or one 503 with Retry-After")
	assert.Equal(t, int32(goroutines*perG), ok.Load()+unavailable.Load())
	assert.Equal(t, served.Load(), ok.Load(), "every handler run answered 200, and only those")
	assert.LessOrEqual(t, most.Load(), int32(k))
	assert.Positive(t, ok.Load())
	assert.Zero(t, lim.InFlight())
	t.Logf("200: %d, 503: %d, most in flight: %d", ok.Load(), unavailable.Load(), most.Load())
}

// TestHandler_HammerOverLoopback drives a real server past a concurrency
// limit: every request gets one 200 or one 503 with Retry-After, and
// net/http never logs a superfluous write.
func TestHandler_HammerOverLoopback(t *testing.T) {
	defer goleak.VerifyNone(t)
	const clients, perClient, k = 16, 25, 2
	lim, err := concurrency.New(k)
	require.NoError(t, err)
	ll, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	require.NoError(t, err)
	var inFlight, most atomic.Int32
	h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		raise(&most, inFlight.Add(1))
		defer inFlight.Add(-1)
		runtime.Gosched()
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "ok")
		http.NewResponseController(w).Flush()
	}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{ll}, RetryAfter: 1500 * time.Millisecond})
	var logged lockedBuffer
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(&logged, "", 0)
	srv.Start()
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()

	var ok, unavailable, other atomic.Int32
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range perClient {
				resp, err := client.Get(srv.URL)
				if err != nil {
					other.Add(1)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				switch {
				case err != nil:
					other.Add(1)
				case resp.StatusCode == http.StatusOK && string(body) == "ok":
					ok.Add(1)
				case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "2" &&
					string(body) == "Service Unavailable\n":
					unavailable.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	srv.Close()
	assert.Zero(t, other.Load())
	assert.Equal(t, int32(clients*perClient), ok.Load()+unavailable.Load())
	assert.Positive(t, ok.Load())
	assert.LessOrEqual(t, most.Load(), int32(k))
	assert.Empty(t, logged.String(), "net/http logged a problem, such as a superfluous WriteHeader")
	t.Logf("200: %d, 503: %d, most in flight: %d", ok.Load(), unavailable.Load(), most.Load())
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// raise sets most to v if v is larger.
func raise(most *atomic.Int32, v int32) {
	for {
		m := most.Load()
		if v <= m || most.CompareAndSwap(m, v) {
			return
		}
	}
}

// FuzzRetryAfter checks the Retry-After arithmetic for any delay: whole
// seconds s with (s-1)s < d <= s*1s for a positive finite delay, and no
// header otherwise.
func FuzzRetryAfter(f *testing.F) {
	for _, d := range []int64{0, 1, int64(time.Second) - 1, int64(time.Second), int64(time.Second) + 1, -1, math.MaxInt64, math.MaxInt64 - 1, math.MinInt64} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		d := time.Duration(n)
		h := newServerHandler(t, okHandler, ramparthttp.ServerConfig{
			Layers: []ramparthttp.ServerLayer{failLayer(&ratelimit.LimitedError{Wait: d})},
		})
		rec := serve(h, get())
		require.Equal(t, http.StatusTooManyRequests, rec.Code)
		v, ok := rec.Header()["Retry-After"]
		if d <= 0 || d == rate.InfDuration {
			require.False(t, ok, "Retry-After %q for %v", v, d)
			return
		}
		require.Len(t, v, 1)
		secs, err := strconv.ParseInt(v[0], 10, 64)
		require.NoError(t, err)
		require.Positive(t, secs)
		whole, rest := n/int64(time.Second), n%int64(time.Second)
		want := whole
		if rest != 0 {
			want++
		}
		require.Equal(t, want, secs, "delay %v", d)
	})
}

func TestNewHandler_BadConfigNamesField(t *testing.T) {
	_, err := ramparthttp.NewHandler(nil, ramparthttp.ServerConfig{})
	assert.EqualError(t, err, "ramparthttp: next handler must not be nil")
	_, err = ramparthttp.NewHandler(okHandler, ramparthttp.ServerConfig{RetryAfter: -time.Second})
	assert.EqualError(t, err, "ramparthttp: ServerConfig.RetryAfter must be >= 0 (0 means no Retry-After header unless the error carries a delay), got -1s")

}

// shedAndLimit returns a limiter with k slots and the overload stack
// around it: shedding outside a waiting concurrency limit.
func shedAndLimit(t testing.TB, k int) (*concurrency.Limiter, []ramparthttp.ServerLayer) {
	t.Helper()
	lim, err := concurrency.New(k)
	require.NoError(t, err)
	shed, err := loadshed.NewLayer[ramparthttp.Exchange, struct{}](loadshed.Config{Readiness: lim})
	require.NoError(t, err)
	ll, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Wait})
	require.NoError(t, err)
	return lim, []ramparthttp.ServerLayer{shed, ll}
}

func TestHandler_AllocsPerServedRequest(t *testing.T) {
	_, layers := shedAndLimit(t, 4)
	h := newServerHandler(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		ramparthttp.ServerConfig{Layers: layers})
	w, r := discardWriter{h: make(http.Header)}, get()
	allocs := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) })
	assert.Equal(t, 1.0, allocs, "only the writer wrapper")
}

type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header         { return w.h }
func (w discardWriter) WriteHeader(int)             {}
func (w discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkHandler(b *testing.B) {
	_, layers := shedAndLimit(b, 1<<20)
	h := newServerHandler(b, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		ramparthttp.ServerConfig{Layers: layers})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w, r := discardWriter{h: make(http.Header)}, get()
		for pb.Next() {
			h.ServeHTTP(w, r)
		}
	})
}

// A request Skip reports true for goes straight to the handler past a
// stack that refuses everything else.
func TestHandler_HT9_SkipBypassesTheLayers(t *testing.T) {
	h := newServerHandler(t, okHandler, ramparthttp.ServerConfig{
		Layers: []ramparthttp.ServerLayer{failLayer(loadshed.ErrOverloaded)},
		Skip:   func(r *http.Request) bool { return r.URL.Path == "/healthz" },
	})
	assert.Equal(t, http.StatusOK, serve(h, httptest.NewRequest(http.MethodGet, "/healthz", nil)).Code)
	assert.Equal(t, http.StatusServiceUnavailable, serve(h, get()).Code)
}

// KeyPeer keys by the client's host without its port; KeyHeader by a
// header's first value, its name in any case.
func TestKeyPeerAndKeyHeader(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "192.0.2.7:5123"
	r.Header.Add("X-Tenant", "a")
	r.Header.Add("X-Tenant", "b")
	assert.Equal(t, "192.0.2.7", ramparthttp.KeyPeer(ramparthttp.Exchange{Request: r}))
	assert.Equal(t, "a", ramparthttp.KeyHeader("x-tenant")(ramparthttp.Exchange{Request: r}))
	assert.Equal(t, "", ramparthttp.KeyHeader("X-Other")(ramparthttp.Exchange{Request: r}))
	r.RemoteAddr = "@unix"
	assert.Equal(t, "@unix", ramparthttp.KeyPeer(ramparthttp.Exchange{Request: r}))
	assert.Equal(t, "", ramparthttp.KeyPeer(ramparthttp.Exchange{}))
	assert.Equal(t, "", ramparthttp.KeyHeader("X-Tenant")(ramparthttp.Exchange{}))
}

// The zero Handler, and a nil *Handler, answer every request with a bare
// 500 instead of panicking.
func TestHandler_ZeroValueAnswers500(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{name: "zero Handler", h: &ramparthttp.Handler{}},
		{name: "nil *Handler", h: (*ramparthttp.Handler)(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			require.NotPanics(t, func() { tc.h.ServeHTTP(rec, get()) })
			assert.Equal(t, http.StatusInternalServerError, rec.Code)
			assert.Equal(t, "Internal Server Error\n", rec.Body.String())
		})
	}
}

// A breaker in a server stack reports every request once: served, refused
// by the open breaker (answered 503), or given up by its client.
func TestServer_EV12_EveryRequestReportedOnce(t *testing.T) {
	var obs observetest.Counter
	sw := &circuitbreaker.Switch{}
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "inbound", Observer: &obs, Switch: sw})
	require.NoError(t, err)
	waiting := make(chan struct{}, 1)
	h, err := ramparthttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			waiting <- struct{}{}
			<-r.Context().Done() // the client goes away
			return
		}
		io.WriteString(w, "hello")
	}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{circuitbreaker.NewLayer[ramparthttp.Exchange, struct{}](br, nil)}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	got := map[string]int{"success": 0, "failure": 0, "ignored": 0, "rejected": 0}
	get := func() {
		resp, err := http.Get(srv.URL + "/ok")
		require.NoError(t, err)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			got["success"]++
		case http.StatusServiceUnavailable:
			got["rejected"]++
		default:
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	for range 3 {
		get()
	}
	sw.ForceOpen(nil)
	for range 2 {
		get()
	}
	sw.Release()

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/wait", nil)
	require.NoError(t, err)
	go func() {
		<-waiting
		cancel()
	}()
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.Canceled)
	got["ignored"]++ // the client gave up

	// The server learns of the cancellation on its own goroutine: wait
	// for its report.
	require.Eventually(t, func() bool { return obs.Outcomes()["ignored"] == 1 }, 10*time.Second, time.Millisecond)
	require.Equal(t, map[string]int{"success": 3, "failure": 0, "ignored": 1, "rejected": 2}, got)
	require.Equal(t, got, obs.Outcomes())
}

// A handler that aborts with http.ErrAbortHandler (net/http's way to cut
// a response: a reverse proxy whose backend died mid-copy), before
// writing or after flushing its headers, gives its concurrency slot back
// as the panic unwinds: the next request is admitted, the live page shows
// nothing in flight and nothing refused, and the observer was told of no
// refusal. The client sees the cut connection.
func TestHandler_LM4_AbortedHandlerFreesItsSlot(t *testing.T) {
	lim, err := concurrency.New(1)
	require.NoError(t, err)
	reg, err := inspect.New(inspect.Config{})
	require.NoError(t, err)
	reg.AddLimiter("inbound", lim)
	var seen observetest.Recorder
	ll, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{
		Limiter: lim, Mode: concurrency.Refuse, Name: "inbound", Observer: observe.Join(reg.Observer(), &seen)})
	require.NoError(t, err)
	h, err := ramparthttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/abort":
			panic(http.ErrAbortHandler)
		case "/cut":
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, "part")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		_, _ = io.WriteString(w, "ok")
	}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{ll}})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	for range 3 {
		_, err := srv.Client().Get(srv.URL + "/abort")
		require.Error(t, err, "the connection is cut before any answer")
		resp, err := srv.Client().Get(srv.URL + "/cut")
		require.NoError(t, err)
		_, err = io.ReadAll(resp.Body)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		resp.Body.Close()
	}
	resp, err := srv.Client().Get(srv.URL + "/ok")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", string(body))

	st := reg.Status(context.Background())
	require.Len(t, st.Limiters, 1)
	assert.Equal(t, inspect.LimiterStatus{Name: "inbound", Kind: "fixed", Limit: 1, InFlight: 0, Refused: 0}, st.Limiters[0])
	assert.Empty(t, seen.Events(), "no refusal, no wait")
	assert.Zero(t, lim.InFlight())
}

// A handler that ignores its context and answers after the timeout
// layer's deadline has answered: the client gets its 200 and the
// observer is told of no timeout; a handler that gives up at the deadline
// gets the 503 answer and one TimeoutFired. The timeouts the operator
// counts are the 503s clients got.
func TestHandler_EV4_TimeoutCountedOnlyWhenItAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen observetest.Recorder
		to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: time.Second, Name: "inbound", Observer: &seen})
		require.NoError(t, err)
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/late" {
				time.Sleep(2 * time.Second) // ignores its context
				_, _ = io.WriteString(w, "late")
				return
			}
			<-r.Context().Done()
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{to}})
		late := newCountingWriter()
		h.ServeHTTP(late, httptest.NewRequest(http.MethodGet, "/late", nil))
		assert.Equal(t, []int{http.StatusOK}, late.codes)
		assert.Empty(t, seen.Events(), "an answered request is no timeout")
		gaveUp := newCountingWriter()
		h.ServeHTTP(gaveUp, httptest.NewRequest(http.MethodGet, "/wait", nil))
		assert.Equal(t, []int{http.StatusServiceUnavailable}, gaveUp.codes)
		assert.Equal(t, []observe.Event{{Source: observe.Timeout, Name: "inbound", Kind: observe.TimeoutFired, Duration: time.Second}}, seen.Events())
	})
}

// A breaker in a server stack judges by the stack's error, not by the
// handler's status: a handler's 500 answer counts as a success, a handler
// a timeout layer below the breaker ends (answered 503) as a failure.
func TestServer_EV12_BreakerJudgesTheStackNotTheStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var obs observetest.Counter
		br, err := circuitbreaker.New(circuitbreaker.Config{Observer: &obs})
		require.NoError(t, err)
		to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: time.Second})
		require.NoError(t, err)
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/wait" {
				<-r.Context().Done()
				return
			}
			http.Error(w, "broken", http.StatusInternalServerError)
		}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{circuitbreaker.NewLayer[ramparthttp.Exchange, struct{}](br, nil), to}})
		broken := newCountingWriter()
		h.ServeHTTP(broken, httptest.NewRequest(http.MethodGet, "/broken", nil))
		assert.Equal(t, []int{http.StatusInternalServerError}, broken.codes)
		assert.Equal(t, map[string]int{"success": 1, "failure": 0, "ignored": 0, "rejected": 0}, obs.Outcomes(), "a 500 answer")
		waited := newCountingWriter()
		h.ServeHTTP(waited, httptest.NewRequest(http.MethodGet, "/wait", nil))
		assert.Equal(t, []int{http.StatusServiceUnavailable}, waited.codes)
		assert.Equal(t, map[string]int{"success": 1, "failure": 1, "ignored": 0, "rejected": 0}, obs.Outcomes(), "a handler the timeout ended")
	})
}
