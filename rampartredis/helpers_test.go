package rampartredis_test

import (
	"context"
	"errors"
	"runtime"
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

var errBackend = errors.New("backend down")

// replica is one process of a fleet: its own client, breaker and Shared.
type replica struct {
	client redis.UniversalClient
	br     *circuitbreaker.Breaker
	sh     *rampartredis.Shared
}

// fleet starts n replicas sharing one breaker key on srv's address.
func fleet(t *testing.T, opts *redis.Options, n int, bcfg circuitbreaker.Config, scfg rampartredis.Config) []*replica {
	t.Helper()
	rs := make([]*replica, n)
	for i := range rs {
		rs[i] = join(t, opts, bcfg, scfg)
	}
	return rs
}

// join starts one replica with its own client for opts.
func join(t *testing.T, opts *redis.Options, bcfg circuitbreaker.Config, scfg rampartredis.Config) *replica {
	t.Helper()
	return joinWith(t, redis.NewClient(opts), bcfg, scfg)
}

// joinWith starts one replica that talks to Redis through c, which it
// closes when the test ends.
func joinWith(t *testing.T, c redis.UniversalClient, bcfg circuitbreaker.Config, scfg rampartredis.Config) *replica {
	t.Helper()
	br, err := circuitbreaker.New(bcfg)
	require.NoError(t, err)
	sh, err := rampartredis.Share(br, c, scfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, sh.Close())
		c.Close()
	})
	return &replica{client: c, br: br, sh: sh}
}

// synced waits until each of rs has read the record once.
func synced(t *testing.T, rs ...*replica) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range rs {
		require.NoError(t, r.sh.WaitSynced(ctx))
	}
}

// via returns opts for a client that connects through addr (a proxy).
func via(opts *redis.Options, addr string) *redis.Options {
	o := *opts
	o.Addr = addr
	return &o
}

// patient returns opts whose commands may take seconds, with the
// matching Config: for tests whose outcome must not depend on a loaded
// machine's Redis answering within the default 200ms (past it, a replica
// fails safe and decides alone, which those tests do not test).
func patient(opts *redis.Options, scfg rampartredis.Config) (*redis.Options, rampartredis.Config) {
	o := *opts
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
	scfg.Timeout = 2 * time.Second
	if scfg.ProbeClaim == 0 {
		scfg.ProbeClaim = 10 * time.Second
	}
	return &o, scfg
}

// trip fails calls through r's breaker until it opens.
func (r *replica) trip(t testing.TB) {
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

// tripAndCall trips tripper, then makes n successful calls through other,
// from another goroutine, and waits for both to return (what names the
// fault they must not wait for). An admission refused fails the test.
func tripAndCall(t *testing.T, what string, tripper, other *replica, n int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for tripper.br.State().State == circuitbreaker.Closed {
			p, err := tripper.br.TryAcquire()
			if !assert.NoError(t, err) {
				return
			}
			p.Failure(errBackend)
		}
		for range n {
			p, err := other.br.TryAcquire()
			if !assert.NoError(t, err) {
				return
			}
			p.Success()
		}
	}()
	waitFor(t, "the calls to return "+what, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
}

// topology is where a test's replicas find Redis: one server, or a
// cluster; the tests of partitions run on both.
type topology struct {
	// direct returns a new client of Redis with the package's short
	// timeouts.
	direct func() redis.UniversalClient
	// proxied returns a new client whose connections pass through
	// proxies that partition it from Redis when cut.
	proxied func(t *testing.T) (redis.UniversalClient, redistest.Proxies)
	// record reads the breaker's shared record.
	record func(t *testing.T) map[string]string
	// timeout is the Config.Timeout the tests give the replicas: what
	// Redis takes to answer on a loaded machine, which the tests of
	// partitions must not take for a partition.
	timeout time.Duration
}

// single is a topology of one redis-server started for t.
func single(t *testing.T) topology {
	srv := server(t)
	return topology{
		direct: func() redis.UniversalClient { return redis.NewClient(srv.Options()) },
		proxied: func(t *testing.T) (redis.UniversalClient, redistest.Proxies) {
			p := redistest.NewProxy(t, srv.Addr)
			return redis.NewClient(via(srv.Options(), p.Addr)), redistest.Proxies{p}
		},
		record:  func(t *testing.T) map[string]string { return recordFields(t, srv) },
		timeout: 100 * time.Millisecond,
	}
}

// waitFor polls cond until it holds, failing the test after 10 seconds.
// Tests against a real redis-server cannot run on virtual time; they wait
// for an outcome, never for a duration.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 10*time.Second, what, cond)
}

// waitWithin is waitFor with a bound of d, for outcomes that take seconds
// by design (a slow link).
func waitWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func server(t testing.TB) *redistest.Server { return redistest.Start(t) }

// clusterFleet starts n replicas, each with its own cluster client.
func clusterFleet(t *testing.T, cl *redistest.Cluster, n int, bcfg circuitbreaker.Config, scfg rampartredis.Config) []*replica {
	t.Helper()
	rs := make([]*replica, n)
	for i := range rs {
		opts := cl.Options()
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
		rs[i] = joinWith(t, redis.NewClusterClient(opts), bcfg, scfg)
	}
	return rs
}

// clusterConfig is patient's Config for a cluster (see helpers_test.go).
func clusterConfig(scfg rampartredis.Config) rampartredis.Config {
	_, scfg = patient(&redis.Options{}, scfg)
	return scfg
}

func clusterRecord(t *testing.T, cl *redistest.Cluster) map[string]string {
	t.Helper()
	m, err := cl.Client().HGetAll(context.Background(), stateKey).Result()
	require.NoError(t, err)
	return m
}

// onCluster is a topology of a three-master cluster started for t: a
// proxied client reaches every node through a proxy of its own. A
// cluster client's commands under the race detector take longer than a
// single node's (slot discovery, redirections): the replicas get a
// Timeout of 500ms, and the clients' own timeouts leave it the bound.
func onCluster(t *testing.T) topology {
	cl := redistest.StartCluster(t)
	patient := func(o *redis.ClusterOptions) *redis.ClusterOptions {
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
		return o
	}
	return topology{
		direct: func() redis.UniversalClient { return redis.NewClusterClient(patient(cl.Options())) },
		proxied: func(t *testing.T) (redis.UniversalClient, redistest.Proxies) {
			o, ps := cl.ProxiedOptions()
			return redis.NewClusterClient(patient(o)), ps
		},
		record:  func(t *testing.T) map[string]string { return clusterRecord(t, cl) },
		timeout: 500 * time.Millisecond,
	}
}
