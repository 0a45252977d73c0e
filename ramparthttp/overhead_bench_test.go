package ramparthttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/timeout"
)

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
