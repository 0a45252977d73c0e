package bench_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/timeout"
)

// BenchmarkHTTPServer measures one request through a handler called
// directly with a minimal ResponseWriter (no network: the difference of two
// rows is all ramparthttp.Handler's): the bare handler, and the handler
// behind a Handler without layers, with a concurrency limit, with a rate
// limit and a concurrency limit, and with a timeout (limit, an hour: it never fires) as well. The rate
// limit never refuses (rate.Inf) and the concurrency limit is far above
// the one request in flight, so every request is answered 200. The loop
// is serveLoop, a named function, so that instructions.sh can count it
// alone.
func BenchmarkHTTPServer(b *testing.B) {
	b.Run("bare", func(b *testing.B) { serveLoop(b, http.HandlerFunc(okHandler)) })
	b.Run("handler", func(b *testing.B) { serveLoop(b, newHTTPHandler(b)) })
	b.Run("concurrency", func(b *testing.B) { serveLoop(b, newHTTPHandler(b, httpConcurrency(b))) })
	b.Run("ratelimit+concurrency", func(b *testing.B) {
		serveLoop(b, newHTTPHandler(b, httpRateLimit(b), httpConcurrency(b)))
	})
	b.Run("full", func(b *testing.B) {
		to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: limit})
		if err != nil {
			b.Fatal(err)
		}
		serveLoop(b, newHTTPHandler(b, httpRateLimit(b), httpConcurrency(b), to))
	})
}

// serveLoop serves one GET per iteration and checks it was answered 200.
func serveLoop(b *testing.B, h http.Handler) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	w := &statusWriter{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		w.code = 0
		h.ServeHTTP(w, req)
		if w.code != http.StatusOK {
			b.Fatalf("status %d", w.code)
		}
	}
}

var okBody = []byte("ok")

func okHandler(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(okBody) }

// statusWriter is the cheapest ResponseWriter: it keeps the status and
// drops the body.
type statusWriter struct {
	header http.Header
	code   int
}

func (w *statusWriter) Header() http.Header { return w.header }

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

func newHTTPHandler(b *testing.B, layers ...ramparthttp.ServerLayer) http.Handler {
	h, err := ramparthttp.NewHandler(http.HandlerFunc(okHandler), ramparthttp.ServerConfig{Layers: layers})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

func httpRateLimit(b *testing.B) ramparthttp.ServerLayer {
	l, err := ratelimit.NewLayer[ramparthttp.Exchange, struct{}](ratelimit.Config{Limiter: rate.NewLimiter(rate.Inf, 1), Mode: ratelimit.Refuse})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func httpConcurrency(b *testing.B) ramparthttp.ServerLayer {
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
