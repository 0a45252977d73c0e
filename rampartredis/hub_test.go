package rampartredis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
)

// many starts one replica with n shared breakers, keyed k0…k(n-1), on
// one client named name (CLIENT LIST shows it on each connection).
func many(t *testing.T, opts *redis.Options, name string, n int, scfg rampartredis.Config) []*replica {
	t.Helper()
	o := *opts
	o.ClientName = name
	c := redis.NewClient(&o)
	t.Cleanup(func() { c.Close() }) // after every Shared closed
	rs := make([]*replica, n)
	for i := range rs {
		bcfg := breakerConfig()
		bcfg.Name = "k" + strconv.Itoa(i)
		br, err := circuitbreaker.New(bcfg)
		require.NoError(t, err)
		sh, err := rampartredis.Share(br, c, scfg)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, sh.Close()) })
		rs[i] = &replica{client: c, br: br, sh: sh}
	}
	return rs
}

// connections returns how many connections of each kind ("normal",
// "pubsub") the clients named name hold, from CLIENT LIST.
func connections(t *testing.T, c *redis.Client, name string) map[string]int {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	require.NoError(t, err)
	n := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		f := map[string]string{}
		for kv := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		if f["name"] != name {
			continue
		}
		kind := "normal"
		if f["sub"] != "0" || f["psub"] != "0" {
			kind = "pubsub"
		}
		n[kind]++
	}
	return n
}

// scriptCalls returns how many scripts Redis has run (EVALSHA and EVAL),
// from INFO commandstats.
func scriptCalls(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	_, scripts := commandCalls(t, c)
	return scripts
}

// numsub returns how many clients are subscribed to each channel.
func numsub(t *testing.T, c *redis.Client, channels ...string) map[string]int64 {
	t.Helper()
	n, err := c.PubSubNumSub(context.Background(), channels...).Result()
	require.NoError(t, err)
	return n
}

// admin returns a client for the test's own queries, patient with a
// loaded machine.
func admin(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	opts, _ := patient(srv.Options(), rampartredis.Config{})
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func channelOf(key string) string { return "rampart:{" + key + "}:changes" }

// Two replicas of 50 breakers each: each replica holds one pub/sub
// connection and one connection for its scripts, and every channel is
// subscribed to by both.
func TestHub_FL21_TwoConnectionsWhateverTheBreakers(t *testing.T) {
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{Refresh: 20 * time.Millisecond})
	a := many(t, opts, "replica-a", 50, scfg)
	b := many(t, opts, "replica-b", 50, scfg)
	synced(t, append(a, b...)...)
	c := admin(t, srv)
	channels := make([]string, 50)
	for i := range channels {
		channels[i] = channelOf("k" + strconv.Itoa(i))
	}
	waitFor(t, "every channel subscribed by both replicas", func() bool {
		for _, n := range numsub(t, c, channels...) {
			if n != 2 {
				return false
			}
		}
		return true
	})
	readAfterNow(t, append(a, b...)...) // a few refreshes
	for _, name := range []string{"replica-a", "replica-b"} {
		assert.Equal(t, map[string]int{"normal": 1, "pubsub": 1}, connections(t, c, name), name)
	}

	// A transition is still one script of the breaker's own, and reaches
	// the other replica.
	a[7].trip(t)
	waitFor(t, "k7 open on replica b", stateIs(b[7].br, circuitbreaker.Open))
	assert.Equal(t, circuitbreaker.Closed, b[8].br.State().State, "k8 is not k7")
}

// The periodic reads of 50 breakers on one node are one script per
// refresh, not 50: Redis runs as many scripts as each breaker counts
// reads (give or take the round under way at either end of the count).
func TestHub_FL21_OneScriptReadsEveryRecord(t *testing.T) {
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{Refresh: 20 * time.Millisecond})
	rs := many(t, opts, "replica", 50, scfg)
	synced(t, rs...)
	c := admin(t, srv)
	readAfterNow(t, rs...) // past the reads on subscribing
	before := make([]int64, len(rs))
	for i, r := range rs {
		before[i] = r.sh.Stats().Commands
	}
	scripts := scriptCalls(t, c)
	waitFor(t, "ten refreshes of every breaker", func() bool {
		for i, r := range rs {
			if r.sh.Stats().Commands < before[i]+10 {
				return false
			}
		}
		return true
	})
	scripts = scriptCalls(t, c) - scripts
	var lo, hi int64 = 1 << 62, 0
	for i, r := range rs {
		d := r.sh.Stats().Commands - before[i]
		lo, hi = min(lo, d), max(hi, d)
	}
	assert.GreaterOrEqual(t, scripts, lo-2, "reads per breaker %d..%d", lo, hi)
	assert.LessOrEqual(t, scripts, hi+2, "one script per refresh: reads per breaker %d..%d", lo, hi)
}

// Redis killed and restarted empty with 2×50 breakers: every channel is
// subscribed again, and a trip after it reaches the other replica by
// pub/sub (reads are hourly).
func TestHub_FL21_RestartResubscribesEveryBreaker(t *testing.T) {
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{Refresh: time.Hour})
	a := many(t, opts, "replica-a", 50, scfg)
	b := many(t, opts, "replica-b", 50, scfg)
	synced(t, append(a, b...)...)
	c := admin(t, srv)
	channels := make([]string, 50)
	for i := range channels {
		channels[i] = channelOf("k" + strconv.Itoa(i))
	}
	everySubscribed := func() bool {
		for _, n := range numsub(t, c, channels...) {
			if n != 2 {
				return false
			}
		}
		return true
	}
	waitFor(t, "every channel subscribed by both replicas", everySubscribed)
	srv.Kill()
	srv.Restart()
	waitFor(t, "every channel subscribed again by both replicas", everySubscribed)
	for _, i := range []int{0, 23, 49} {
		a[i].trip(t)
		waitFor(t, fmt.Sprintf("k%d open on replica b", i), stateIs(b[i].br, circuitbreaker.Open))
	}
	for _, name := range []string{"replica-a", "replica-b"} {
		assert.Equal(t, 1, connections(t, c, name)["pubsub"], name)
	}
}
