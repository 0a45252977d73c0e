package rampartredis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
)

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
