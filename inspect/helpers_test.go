package inspect_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/inspect"
)

var errBoom = errors.New("connection refused")

// newBreaker returns a breaker for cfg, failing the test on a config error.
func newBreaker(t testing.TB, cfg circuitbreaker.Config) *circuitbreaker.Breaker {
	t.Helper()
	b, err := circuitbreaker.New(cfg)
	require.NoError(t, err)
	return b
}

// call makes one call through b with circuitbreaker.Run, returning err.
func call(b *circuitbreaker.Breaker, err error) error {
	_, got := circuitbreaker.Run(context.Background(), b, func(context.Context) (struct{}, error) {
		return struct{}{}, err
	})
	return got
}

// get serves one GET of target by h and returns the status code, the
// Content-Type and the body.
func get(t testing.TB, h http.Handler, target string) (int, string, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, rec.Header().Get("Content-Type"), string(body)
}

// column returns f of each row.
func column(rows []inspect.BreakerStatus, f func(inspect.BreakerStatus) string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, f(r))
	}
	return out
}
