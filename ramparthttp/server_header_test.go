package ramparthttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/timeout"
)

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
