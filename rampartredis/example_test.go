package rampartredis_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
)

// The examples run against a redis-server of their own, on real time
// (synctest's virtual clock cannot drive another process): they wait for
// an outcome by polling, never for a duration.

// Two replicas share one breaker: the first one's trip opens the second
// one's breaker, which refuses calls without having seen a failure.
func ExampleShare() {
	addr, stop, err := redistest.Run() // a redis-server of its own
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	replica := func(id string) (*circuitbreaker.Breaker, func()) {
		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		br, err := circuitbreaker.New(circuitbreaker.Config{Name: "payments", Policy: circuitbreaker.Consecutive{Failures: 2}})
		if err != nil {
			panic(err)
		}
		shared, err := rampartredis.Share(br, client, rampartredis.Config{ID: id})
		if err != nil {
			panic(err)
		}
		return br, func() { shared.Close(); client.Close() }
	}
	a, closeA := replica("a")
	defer closeA()
	b, closeB := replica("b")
	defer closeB()

	for range 2 {
		p, _ := a.TryAcquire()
		p.Failure(errors.New("connection refused"))
	}
	for b.State().State != circuitbreaker.Open { // until b has read a's trip
		time.Sleep(time.Millisecond)
	}
	_, err = b.TryAcquire()
	fmt.Println(errors.Is(err, circuitbreaker.ErrOpen), errors.Is(err, rampartredis.ErrFleetOpen))
	var fe *rampartredis.FleetOpenError
	if errors.As(err, &fe) {
		fmt.Printf("reported by %s: %s\n", fe.By, fe.Cause)
	}
	// Output:
	// true true
	// reported by a: connection refused
}

// Two replicas share a quota of 100 calls per second: the first one,
// alone, gets all of it; the second one, joining, gets half of it, and the
// first gets the other half at its next Slice. (The Slice of an hour keeps
// the output fixed; the default is 100ms. The Timeout of seconds lets a
// busy machine's Redis answer the first lease, which also loads the
// script; the default is 50ms, past which the Quota starts as its
// Unreachable says.)
func ExampleNewQuota() {
	addr, stop, err := redistest.Run() // a redis-server of its own
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	replica := func(id string) (*rampartredis.Quota, func()) {
		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		q, err := rampartredis.NewQuota(client, rampartredis.QuotaConfig{Key: "partner-api", Limit: 100, Slice: time.Hour, Timeout: 5 * time.Second, ID: id})
		if err != nil {
			panic(err)
		}
		return q, func() { q.Close(); client.Close() }
	}
	a, closeA := replica("a")
	defer closeA()
	fmt.Printf("a alone: %v calls/s\n", a.Stats().Share)
	b, closeB := replica("b")
	defer closeB()
	fmt.Printf("b joins: %v calls/s (limiter: %v), after %d command\n", b.Stats().Share, b.Limiter().Limit(), b.Stats().Commands)
	// Output:
	// a alone: 100 calls/s
	// b joins: 50 calls/s (limiter: 50), after 1 command
}

// slogPrintf hands go-redis's log lines to a *slog.Logger: go-redis calls
// Printf on the logger given to redis.SetLogger.
type slogPrintf struct{ l *slog.Logger }

func (p slogPrintf) Printf(ctx context.Context, format string, v ...any) {
	p.l.WarnContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

// go-redis logs every failed dial to stderr while Redis is down. Route
// those lines to log/slog (or silence them with logging.Disable from
// github.com/redis/go-redis/v9/logging) once, before creating clients.
// The example is compiled, not run: SetLogger sets go-redis's logger for
// the whole process.
func Example_goRedisLogs() {
	redis.SetLogger(slogPrintf{l: slog.Default()})
	// Or: logging.Disable()

	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	// ... rampartredis.Share(br, client, ...) as in the Share example.
}

// Two replicas share a group of per-host breakers: a host's breaker joins
// the fleet's record for that host when the group makes it, so the first
// replica's trip of host "b" opens the second replica's breaker for "b",
// and only that one.
func ExampleShareGroup() {
	addr, stop, err := redistest.Run() // a redis-server of its own
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	replica := func() (*circuitbreaker.Group[string], func()) {
		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		hosts, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
			Breaker: circuitbreaker.Config{Name: "hosts", Policy: circuitbreaker.Consecutive{Failures: 2}},
		})
		if err != nil {
			panic(err)
		}
		shared, err := rampartredis.ShareGroup(hosts, client, rampartredis.Config{})
		if err != nil {
			panic(err)
		}
		return hosts, func() { shared.Close(); client.Close() }
	}
	first, closeFirst := replica()
	defer closeFirst()
	second, closeSecond := replica()
	defer closeSecond()

	second.Breaker("a")
	b := second.Breaker("b") // joins the record of "hosts/b"
	for range 2 {
		p, _ := first.Breaker("b").TryAcquire()
		p.Failure(errors.New("connection refused"))
	}
	for b.State().State != circuitbreaker.Open { // until the trip arrives
		time.Sleep(time.Millisecond)
	}
	fmt.Println("b:", b.State().State, "a:", second.Breaker("a").State().State)
	// Output:
	// b: open a: closed
}
