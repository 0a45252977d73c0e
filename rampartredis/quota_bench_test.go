package rampartredis_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
)

// The two ways to share a quota, side by side: a Quota (a local limiter
// whose rate is leased every Slice) and redis_rate's GCRA (one script per
// call). Per call, and over a run of 8 replicas that each want more than
// the quota (RAMPART_FLEET_RATE_SECONDS, default 2; the target is
// measured over 10).

const benchQuota = 200 // calls per second, fleet-wide

func BenchmarkQuota_PerCall(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewClient(srv.Options())
	defer c.Close()
	q, err := rampartredis.NewQuota(c, rampartredis.QuotaConfig{Key: "bench", Limit: rate.Limit(1e9)})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	lim := q.Limiter()
	b.ReportAllocs()
	for b.Loop() {
		lim.Allow()
	}
}

func BenchmarkGCRA_PerCall(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewClient(srv.Options())
	defer c.Close()
	lim := redis_rate.NewLimiter(c)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Allow(ctx, "bench", redis_rate.PerSecond(1e9)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFleetRate(b *testing.B) {
	d := 2 * time.Second
	if s := os.Getenv("RAMPART_FLEET_RATE_SECONDS"); s != "" {
		v, err := time.ParseDuration(s + "s")
		if err != nil {
			b.Fatal(err)
		}
		d = v
	}
	for _, tc := range []struct {
		name  string
		admit func(b *testing.B, opts *redis.Options) func(ctx context.Context) bool
	}{
		{name: "quota", admit: quotaAdmit},
		{name: "gcra", admit: gcraAdmit},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := redistest.Start(b)
			for b.Loop() {
				var admitted atomic.Int64
				ctx, cancel := context.WithTimeout(context.Background(), d)
				var wg sync.WaitGroup
				for range 8 {
					admit := tc.admit(b, srv.Options())
					wg.Go(func() {
						for ctx.Err() == nil {
							if admit(ctx) {
								admitted.Add(1)
							}
						}
					})
				}
				wg.Wait()
				cancel()
				rate := float64(admitted.Load()) / d.Seconds()
				b.ReportMetric(rate, "admitted/s")
				b.ReportMetric(100*rate/benchQuota, "%quota")
			}
		})
	}
}

// quotaAdmit is one replica with a Quota: it waits for its local token.
func quotaAdmit(b *testing.B, opts *redis.Options) func(ctx context.Context) bool {
	c := redis.NewClient(opts)
	q, err := rampartredis.NewQuota(c, rampartredis.QuotaConfig{Key: "fleet", Limit: benchQuota})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close(); c.Close() })
	lim := q.Limiter()
	return func(ctx context.Context) bool { return lim.Wait(ctx) == nil }
}

// gcraAdmit is one replica with redis_rate: one script per call, and a
// refused call retries after the delay it is told.
func gcraAdmit(b *testing.B, opts *redis.Options) func(ctx context.Context) bool {
	c := redis.NewClient(opts)
	b.Cleanup(func() { c.Close() })
	lim := redis_rate.NewLimiter(c)
	return func(ctx context.Context) bool {
		res, err := lim.Allow(ctx, "fleet", redis_rate.PerSecond(benchQuota))
		if err != nil {
			return false
		}
		if res.Allowed == 0 {
			t := time.NewTimer(res.RetryAfter)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			return false
		}
		return true
	}
}
