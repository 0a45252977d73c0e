package rampartredis_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
)

// Two replicas share one breaker: the first one's trip opens the second
// one's breaker, which rejects calls without having seen a failure.
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
	for b.State().State != circuitbreaker.Open {
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
