package ramparthttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/timeout"
)

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
