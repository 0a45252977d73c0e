package ramparthttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/ramparthttp"
)

// A handler that sets the headers of an answer and then gives up: the 503
// must carry none of them, only what was set outside the Handler.
func TestHandler_TO1_RefusalDropsHeadersOfUnwrittenAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		to, err := ramparthttp.ServerTimeoutLayer(time.Second)
		require.NoError(t, err)
		h := newServerHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "req-7", w.Header().Get("X-Request-Id"), "the handler sees outer headers")
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Cache-Control", "public, max-age=86400")
			w.Header().Set("Set-Cookie", "s=1")
			w.Header().Set("Retry-After", "600")
			w.Header().Del("X-Request-Id")
			<-r.Context().Done()
		}), ramparthttp.HandlerConfig{Layers: []ramparthttp.ServerLayer{to}, RetryAfter: 2 * time.Second})

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
			}), ramparthttp.HandlerConfig{})
			rec := httptest.NewRecorder()
			rec.Header().Set("X-Outer", "1")
			h.ServeHTTP(rec, get())
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
			assert.Empty(t, rec.Header().Values("X-Outer"), "the handler may delete an outer header")
		})
	}
}
