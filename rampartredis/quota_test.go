package rampartredis_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/ratelimit"
)

// These tests run against a real redis-server over loopback, on real
// time: synctest's virtual clock cannot drive another process or a
// socket. They wait for outcomes (waitFor), never for a duration; the one
// time.Sleep paces a busy replica's loop.

// quotas starts n replicas of one quota, each with its own client.
func quotas(t *testing.T, opts *redis.Options, n int, cfg rampartredis.QuotaConfig) []*rampartredis.Quota {
	t.Helper()
	qs := make([]*rampartredis.Quota, n)
	for i := range qs {
		c := redis.NewClient(opts)
		q, err := rampartredis.NewQuota(c, cfg)
		require.NoError(t, err)
		qs[i] = q
		t.Cleanup(func() {
			require.NoError(t, q.Close())
			c.Close()
		})
	}
	return qs
}

// shareIs reports whether q's share is want, to the hundredth of a call
// per second: shares are rounded to thousandths, and replicas that divide
// the quota at different moments settle a thousandth or two apart.
func shareIs(q *rampartredis.Quota, want rate.Limit) func() bool {
	return func() bool { return math.Abs(float64(q.Stats().Share-want)) < 0.01 }
}

func TestQuota_FL12_MaxMinFairShares(t *testing.T) {
	srv := server(t)
	qs := quotas(t, srv.Options(), 4, rampartredis.QuotaConfig{Key: "api", Limit: 100, Slice: 20 * time.Millisecond})
	// Idle replicas each report a demand of one call a second and split
	// the rest equally: 1 + 96/4.
	for _, q := range qs {
		waitFor(t, "equal shares", shareIs(q, 25))
	}
	// One replica uses everything it gets: the others keep what they use
	// (one call a second each), it gets the rest.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				qs[0].Limiter().Allow()
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	waitFor(t, "the busy replica's share", shareIs(qs[0], 97))
	for _, q := range qs[1:] {
		waitFor(t, "the idle replicas' shares", shareIs(q, 1))
	}
	close(stop)
	<-done
}

func TestQuota_FL13_UnreachableRedis(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  rampartredis.Unreachable
		share rate.Limit
	}{
		{name: "LocalShare", mode: rampartredis.LocalShare, share: 50},
		{name: "Refuse", mode: rampartredis.Refuse, share: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := server(t)
			qs := quotas(t, srv.Options(), 2, rampartredis.QuotaConfig{Key: "api", Limit: 100, Slice: 20 * time.Millisecond, Unreachable: tc.mode})
			for _, q := range qs {
				waitFor(t, "equal shares", shareIs(q, 50))
			}
			srv.Kill()
			for _, q := range qs {
				waitFor(t, "the unreachable share", shareIs(q, tc.share))
			}
			if tc.mode == rampartredis.Refuse {
				l, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: qs[0].Limiter(), Mode: ratelimit.Refuse})
				require.NoError(t, err)
				svc := l.Wrap(rampart.ServiceFunc[int, int](func(_ context.Context, n int) (int, error) { return n, nil }))
				_, err = svc.Call(context.Background(), 1)
				assert.ErrorIs(t, err, ratelimit.ErrLimited)
			}
			srv.Restart()
			for _, q := range qs {
				waitFor(t, "equal shares again", shareIs(q, 50))
			}
		})
	}
}

func TestQuota_FL13_StartsWithoutRedis(t *testing.T) {
	srv := server(t)
	srv.Kill()
	q := quotas(t, srv.Options(), 1, rampartredis.QuotaConfig{Key: "api", Limit: 100, Replicas: 4})[0]
	assert.Equal(t, rate.Limit(25), q.Stats().Share, "Limit / Replicas before Redis answers")
	assert.Equal(t, 3, q.Limiter().Burst(), "a Slice of the share, rounded up")
	assert.False(t, q.Limiter().Allow(), "the bucket starts empty")
}

func TestQuota_FL14_BadInput(t *testing.T) {
	good := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer good.Close()
	for _, tc := range []struct {
		name string
		cfg  rampartredis.QuotaConfig
		want string
	}{
		{name: "key", cfg: rampartredis.QuotaConfig{Limit: 1}, want: "rampartredis: QuotaConfig.Key must not be empty"},
		{name: "limit", cfg: rampartredis.QuotaConfig{Key: "k"}, want: "rampartredis: QuotaConfig.Limit must be positive and finite, got 0"},
		{name: "infinite", cfg: rampartredis.QuotaConfig{Key: "k", Limit: rate.Inf}, want: "rampartredis: QuotaConfig.Limit must be positive and finite, got 1.7976931348623157e+308"},
		{name: "slice", cfg: rampartredis.QuotaConfig{Key: "k", Limit: 1, Slice: -1}, want: "rampartredis: QuotaConfig.Slice must be >= 0 (0 means 100ms), got -1ns"},
		{name: "timeout", cfg: rampartredis.QuotaConfig{Key: "k", Limit: 1, Timeout: -1}, want: "rampartredis: QuotaConfig.Timeout must be >= 0 (0 means 50ms), got -1ns"},
		{name: "backoff", cfg: rampartredis.QuotaConfig{Key: "k", Limit: 1, MaxBackoff: -1}, want: "rampartredis: QuotaConfig.MaxBackoff must be >= 0 (0 means 1s), got -1ns"},
		{name: "unreachable", cfg: rampartredis.QuotaConfig{Key: "k", Limit: 1, Unreachable: 2}, want: "rampartredis: QuotaConfig.Unreachable must be LocalShare or Refuse, got 2"},
		{name: "replicas", cfg: rampartredis.QuotaConfig{Key: "k", Limit: 1, Replicas: -1}, want: "rampartredis: QuotaConfig.Replicas must be >= 0 (0 means 1), got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := rampartredis.NewQuota(good, tc.cfg)
			require.EqualError(t, err, tc.want)
			assert.Nil(t, q)
		})
	}
	_, err := rampartredis.NewQuota(nil, rampartredis.QuotaConfig{Key: "k", Limit: 1})
	require.EqualError(t, err, "rampartredis: client must not be nil")
	_, err = rampartredis.NewQuota((*redis.ClusterClient)(nil), rampartredis.QuotaConfig{Key: "k", Limit: 1})
	require.EqualError(t, err, "rampartredis: client must not be nil", "a typed nil too")
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	_, err = rampartredis.NewQuota(ring, rampartredis.QuotaConfig{Key: "k", Limit: 1})
	require.EqualError(t, err, "rampartredis: the client's RingOptions.ContextTimeoutEnabled must be true, so that the configured Timeout bounds every command")
}
