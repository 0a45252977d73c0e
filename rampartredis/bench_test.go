package rampartredis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
)

// A Closed success through a shared breaker is the plain breaker's path:
// sharing adds a listener, which only transitions reach.
func BenchmarkClosedSuccess(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "plain"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			br, err := circuitbreaker.New(breakerConfig())
			require.NoError(b, err)
			if shared {
				srv := server(b)
				c := srv.Client()
				sh, err := rampartredis.Share(br, c, rampartredis.Config{Refresh: time.Hour})
				require.NoError(b, err)
				b.Cleanup(func() { sh.Close() })
			}
			b.ReportAllocs()
			for b.Loop() {
				p, _ := br.TryAcquire()
				p.Success()
			}
		})
	}
}

func TestShare_FL4_ClosedSuccessAllocatesNothing(t *testing.T) {
	srv := server(t)
	br, err := circuitbreaker.New(breakerConfig())
	require.NoError(t, err)
	sh, err := rampartredis.Share(br, srv.Client(), rampartredis.Config{Refresh: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { sh.Close() })
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := br.TryAcquire()
		p.Success()
	})
	assert.Zero(t, allocs)
}

// The benchmark runs against a real redis-server on real time, as the
// replicas it compares would; its one time.Sleep is the backend's 1 ms
// latency, part of what is measured, not a wait for an outcome.

// The anchor: sony/gobreaker v2's distributed breaker reads the shared
// state, takes a Redis lock, runs the call under it and writes the state
// back, on every call. Each iteration here is 8 goroutines making 25
// calls each to a 1 ms backend, through one breaker per goroutine (one
// replica each) sharing state through one redis-server; ns/op is the
// wall time of the 200 calls, and redis-commands/op what Redis received.

const (
	anchorWorkers = 8
	anchorCalls   = 25
	anchorLatency = time.Millisecond
)

func anchorBackend() error {
	time.Sleep(anchorLatency)
	return nil
}

func BenchmarkAnchor_200CallsOf1ms(b *testing.B) {
	b.Run("gobreaker-distributed", func(b *testing.B) {
		srv := redistest.Start(b)
		c := redis.NewClient(srv.Options())
		defer c.Close()
		dcbs := make([]*gobreaker.DistributedCircuitBreaker[struct{}], anchorWorkers)
		for i := range dcbs {
			dcb, err := gobreaker.NewDistributedCircuitBreaker[struct{}](&gobreakerStore{c: redis.NewClient(srv.Options())}, gobreaker.Settings{Name: "anchor"})
			if err != nil {
				b.Fatal(err)
			}
			dcbs[i] = dcb
		}
		anchorRun(b, c, func(i int) error {
			_, err := dcbs[i].Execute(func() (struct{}, error) { return struct{}{}, anchorBackend() })
			return err
		})
	})
	b.Run("rampart-shared", func(b *testing.B) {
		srv := redistest.Start(b)
		c := redis.NewClient(srv.Options())
		defer c.Close()
		brs := make([]*circuitbreaker.Breaker, anchorWorkers)
		for i := range brs {
			br, err := circuitbreaker.New(circuitbreaker.Config{Name: "anchor"})
			if err != nil {
				b.Fatal(err)
			}
			rc := redis.NewClient(srv.Options())
			sh, err := rampartredis.Share(br, rc, rampartredis.Config{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { sh.Close(); rc.Close() })
			waitFor(b, "the startup reads", func() bool { return sh.Stats().Commands >= 2 })
			brs[i] = br
		}
		anchorRun(b, c, func(i int) error {
			_, err := circuitbreaker.Run(context.Background(), brs[i], func(context.Context) (struct{}, error) {
				return struct{}{}, anchorBackend()
			})
			return err
		})
	})
}

// anchorRun times the 200 calls per iteration and reports the commands
// Redis processed during them.
func anchorRun(b *testing.B, c *redis.Client, call func(worker int) error) {
	ctx := context.Background()
	before := commandsProcessed(b, c, ctx)
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, anchorWorkers*anchorCalls)
		for w := range anchorWorkers {
			wg.Go(func() {
				for range anchorCalls {
					if err := call(w); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	after := commandsProcessed(b, c, ctx)
	b.ReportMetric(float64(after-before-1)/float64(b.N), "redis-commands/op")
}

// commandsProcessed reads Redis's total_commands_processed (the INFO
// command itself counts one).
func commandsProcessed(b *testing.B, c *redis.Client, ctx context.Context) int64 {
	info, err := c.InfoMap(ctx, "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, m := range info {
		if v, ok := m["total_commands_processed"]; ok {
			_, _ = fmt.Sscan(v, &n)
		}
	}
	return n
}

// gobreakerStore is gobreaker's SharedDataStore over go-redis, as its
// documentation describes one: a lock with SET NX PX.
type gobreakerStore struct{ c *redis.Client }

func (s *gobreakerStore) Lock(name string) error {
	ok, err := s.c.SetNX(context.Background(), name, "1", 5*time.Second).Result()
	if err == nil && !ok {
		err = errors.New("locked")
	}
	return err
}

func (s *gobreakerStore) Unlock(name string) error {
	return s.c.Del(context.Background(), name).Err()
}

func (s *gobreakerStore) GetData(name string) ([]byte, error) {
	v, err := s.c.Get(context.Background(), name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

func (s *gobreakerStore) SetData(name string, data []byte) error {
	return s.c.Set(context.Background(), name, data, 0).Err()
}

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
