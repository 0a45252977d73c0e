package ratelimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/ratelimit"
)

// newFake returns a clock.Fake for the tests.
func newFake() *clock.Fake {
	return clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
}

var modes = map[string]ratelimit.Mode{"Wait": ratelimit.Wait, "Refuse": ratelimit.Refuse}

// echo returns a service that answers req and counts its calls.
func echo(calls *atomic.Int64) rampart.Service[int, int] {
	return rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		calls.Add(1)
		return req, nil
	})
}

func build(t testing.TB, lim *rate.Limiter, mode ratelimit.Mode, inner rampart.Service[int, int]) rampart.Service[int, int] {
	t.Helper()
	layer, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: lim, Mode: mode})
	require.NoError(t, err)
	return layer.Wrap(inner)
}

func requireLimited(t *testing.T, err error, retryAfter time.Duration, pastDeadline bool) {
	t.Helper()
	require.ErrorIs(t, err, ratelimit.ErrLimited)
	var le *ratelimit.LimitedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, retryAfter, le.Wait)
	assert.Equal(t, pastDeadline, le.PastDeadline)
	var rd rampart.Hint
	require.ErrorAs(t, err, &rd)
	assert.Equal(t, retryAfter, rd.RetryAfter())
}

var okService = rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })

func wrapIfOK(l rampart.Layer[int, int], err error, svc rampart.Service[int, int]) (rampart.Service[int, int], error) {
	if err != nil {
		return nil, err
	}
	return l.Wrap(svc), nil
}

var echoReq = rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })
