package ratelimit_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ratelimit"
)

var echoReq = rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })

func TestRateLimit_EV6_RefusedAndQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		lim := rate.NewLimiter(10, 1) // a token every 100ms
		svc, err := wrap.Service(echoReq, ratelimit.NewLayer, ratelimit.Config{Limiter: lim, Name: "api", Observer: &rec})
		require.NoError(t, err)

		_, err = svc.Call(t.Context(), "free token")
		require.NoError(t, err)
		_, err = svc.Call(t.Context(), "waits 100ms")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, errDeadline := svc.Call(ctx, "refused: the token is due after the deadline")
		require.ErrorIs(t, errDeadline, ratelimit.ErrLimited)

		require.Equal(t, []observe.Event{
			{Source: observe.RateLimit, Name: "api", Kind: observe.Queued, Duration: 100 * time.Millisecond},
			{Source: observe.RateLimit, Name: "api", Kind: observe.Refused, Err: errDeadline},
		}, rec.Events())
	})
}

func TestRateLimit_EV6_KeyedRejectRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 10, Name: "per-user", Observer: &rec})
		require.NoError(t, err)
		svc, err := wrap.Service3(echoReq, ratelimit.NewKeyedLayer, k, func(req string) string { return req }, ratelimit.Refuse)
		require.NoError(t, err)

		_, err = svc.Call(t.Context(), "alice")
		require.NoError(t, err)
		_, err = svc.Call(t.Context(), "bob")
		require.NoError(t, err)
		_, errAlice := svc.Call(t.Context(), "alice")
		require.ErrorIs(t, errAlice, ratelimit.ErrLimited)

		require.Equal(t, []observe.Event{
			{Source: observe.RateLimit, Name: "per-user", Kind: observe.Refused, Err: errAlice},
		}, rec.Events())
	})
}
