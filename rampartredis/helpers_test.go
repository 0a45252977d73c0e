package rampartredis_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
)

var errBackend = errors.New("backend down")

// replica is one process of a fleet: its own client, breaker and Shared.
type replica struct {
	client *redis.Client
	br     *circuitbreaker.Breaker
	sh     *rampartredis.Shared
}

// fleet starts n replicas sharing one breaker key on srv's address.
func fleet(t *testing.T, opts *redis.Options, n int, bcfg circuitbreaker.Config, scfg rampartredis.Config) []*replica {
	t.Helper()
	rs := make([]*replica, n)
	for i := range rs {
		c := redis.NewClient(opts)
		br, err := circuitbreaker.New(bcfg)
		require.NoError(t, err)
		sh, err := rampartredis.Share(br, c, scfg)
		require.NoError(t, err)
		rs[i] = &replica{client: c, br: br, sh: sh}
		t.Cleanup(func() {
			require.NoError(t, sh.Close())
			c.Close()
		})
	}
	return rs
}

// trip fails calls through r's breaker until it opens.
func (r *replica) trip(t *testing.T) {
	t.Helper()
	for r.br.State().State == circuitbreaker.Closed {
		p, err := r.br.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBackend)
	}
}

func stateIs(br *circuitbreaker.Breaker, s circuitbreaker.State) func() bool {
	return func() bool { return br.State().State == s }
}

// ownGoroutines returns the stacks of goroutines running this package's
// code (not the test's), for leak checks.
func ownGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var own []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "rampartredis.(*") && !strings.Contains(g, "_test.") {
			own = append(own, g)
		}
	}
	return own
}
