package rampartredis_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
)

// The fault tests again, on a real Redis Cluster of three masters that
// each test starts on loopback: every key of one breaker is in one slot
// (its hash tag), so every script runs on the slot's master, and the
// change messages reach subscribers connected to any node.

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

// onCluster is a topology of a three-master cluster started for t: a
// proxied client reaches every node through a proxy of its own.
func onCluster(t *testing.T) topology {
	cl := redistest.StartCluster(t)
	return topology{
		direct: func() redis.UniversalClient { return redis.NewClusterClient(cl.Options()) },
		proxied: func(t *testing.T) (redis.UniversalClient, redistest.Proxies) {
			o, ps := cl.ProxiedOptions()
			return redis.NewClusterClient(o), ps
		},
		record: func(t *testing.T) map[string]string { return clusterRecord(t, cl) },
	}
}

func TestCluster_FL16_AReplicaCutOffAdoptsTheRecordItFinds(t *testing.T) {
	cutOffAdopts(t, onCluster(t))
}

func TestCluster_FL17_AVerdictAfterItsClaimLapsedChangesNothing(t *testing.T) {
	lateVerdict(t, onCluster(t))
}

func clusterRecord(t *testing.T, cl *redistest.Cluster) map[string]string {
	t.Helper()
	m, err := cl.Client().HGetAll(context.Background(), stateKey).Result()
	require.NoError(t, err)
	return m
}

func TestCluster_FL20_TripOpensEveryReplicaAndOneProbeCloses(t *testing.T) {
	cl := redistest.StartCluster(t)
	cfg := breakerConfig()
	cfg.CoolDown = 300 * time.Millisecond
	rs := clusterFleet(t, cl, 3, cfg, clusterConfig(rampartredis.Config{}))
	synced(t, rs...)
	rs[0].trip(t)
	for _, r := range rs[1:] {
		waitFor(t, "every replica open", func() bool { return r.br.State().Remote })
		var fe *rampartredis.FleetOpenError
		require.ErrorAs(t, r.br.State().Cause, &fe)
	}
	stop := make(chan struct{})
	probes, _, wait := callUntil(rs, nil, stop)
	for _, r := range rs {
		waitFor(t, "every replica closed", stateIs(r.br, circuitbreaker.Closed))
	}
	close(stop)
	wait()
	assert.Equal(t, int32(1), sum(probes), "one probe fleet-wide")
	assert.Equal(t, "closed", clusterRecord(t, cl)["state"])
}

func TestCluster_FL20_RestartedFleetProbesAnEndedRecord(t *testing.T) {
	cl := redistest.StartCluster(t)
	require.NoError(t, cl.Client().HSet(context.Background(), stateKey,
		"gen", 7, "state", "open", "until", 1, "cause", "backend down", "by", "old").Err())
	rs := clusterFleet(t, cl, 3, breakerConfig(), clusterConfig(rampartredis.Config{ProbeClaim: time.Hour}))
	synced(t, rs...)
	stop := make(chan struct{})
	probes, _, wait := callUntil(rs, nil, stop)
	waitFor(t, "the record closed", func() bool { return clusterRecord(t, cl)["state"] == "closed" })
	for _, r := range rs {
		waitFor(t, "every replica closed", stateIs(r.br, circuitbreaker.Closed))
	}
	close(stop)
	wait()
	assert.Equal(t, int32(1), sum(probes))
	assert.Equal(t, "8", clusterRecord(t, cl)["gen"])
}

func TestCluster_FL20_LockstepEvidence(t *testing.T) {
	cl := redistest.StartCluster(t)
	cfg := breakerConfig()
	cfg.Policy, cfg.CoolDown = circuitbreaker.Consecutive{Failures: 5}, time.Minute
	rs := clusterFleet(t, cl, 8, cfg, clusterConfig(rampartredis.Config{Failures: 5, CoolDown: time.Minute}))
	synced(t, rs...)
	failed := 0
	for {
		n := 0
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, r := range rs {
			wg.Go(func() {
				if p, err := r.br.TryAcquire(); err == nil {
					mu.Lock()
					n++
					mu.Unlock()
					p.Failure(errBackend)
				}
			})
		}
		wg.Wait()
		if n == 0 {
			break
		}
		failed += n
		waitFor(t, "the round reported", func() bool {
			var rep int64
			for _, r := range rs {
				rep += r.sh.Stats().Reported
			}
			return rep == int64(failed)
		})
		if clusterRecord(t, cl)["state"] == "open" {
			for _, r := range rs {
				waitFor(t, "every replica on the record", func() bool { return r.br.State().Remote })
			}
		}
	}
	assert.LessOrEqual(t, failed, 10)
}

func TestCluster_FL20_MasterKilledMidRun(t *testing.T) {
	cl := redistest.StartCluster(t)
	master := cl.Master(stateKey)
	killedMidRun(t, func() redis.UniversalClient { return redis.NewClusterClient(cl.Options()) },
		master.Kill,
		func() {
			master.Restart() // empty, rejoins with its slots
			cl.WaitOK()
		},
		func() map[string]string { return clusterRecord(t, cl) })
}

// killedMidRun: the master serving the breaker's keys is killed (kill)
// while two replicas run; calls never wait, a trip stays the replica's
// own, and once a master serves the keys again (back) the trip is
// written there and reaches the other replica. With an hourly read, it
// reaches it by pub/sub, so the subscription must have moved to the
// serving master (a subscriber left on a dead node is a known fault of
// cluster clients), or by the read it makes on resubscribing.
func killedMidRun(t *testing.T, client func() redis.UniversalClient, kill, back func(), record func() map[string]string) {
	cfg := breakerConfig()
	cfg.CoolDown = time.Minute
	scfg := rampartredis.Config{Timeout: 100 * time.Millisecond, Refresh: time.Hour, MaxBackoff: 200 * time.Millisecond}
	rs := make([]*replica, 2)
	for i := range rs {
		rs[i] = joinWith(t, client(), cfg, scfg)
	}
	synced(t, rs...)
	kill()
	tripAndCall(t, "while the master is down", rs[0], rs[1], 100)
	waitFor(t, "a failed command", func() bool { return rs[0].sh.Stats().Failures >= 1 })
	assert.Equal(t, circuitbreaker.Closed, rs[1].br.State().State)
	back()
	waitFor(t, "the trip shared once a master serves the keys again", func() bool { return rs[1].br.State().Remote })
	assert.Equal(t, "open", record()["state"])
}

func TestCluster_FL20_QuotaOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	// The first lease also finds the slots and loads the script: a
	// Timeout longer than the default keeps a loaded machine from failing
	// it, and the assertions below still need the master's answer.
	q, err := rampartredis.NewQuota(cl.Client(), rampartredis.QuotaConfig{Key: "partner", Limit: 100, Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer q.Close()
	st := q.Stats()
	assert.Equal(t, int64(0), st.Failures, "the first lease was answered by the slot's master")
	assert.Positive(t, float64(st.Share))
	assert.LessOrEqual(t, float64(st.Share), 100.0)
}

// Behind Redis Sentinel: go-redis's failover client (a *redis.Client that
// asks the Sentinel for the master) against a master, its replica and a
// Sentinel that each test starts on loopback.

func TestSentinel_FL20_TripOpensEveryReplicaAndAQuotaLeases(t *testing.T) {
	st := redistest.StartSentinels(t)
	rs := make([]*replica, 2)
	for i := range rs {
		opts := st.Options()
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
		rs[i] = joinWith(t, redis.NewFailoverClient(opts), breakerConfig(), clusterConfig(rampartredis.Config{}))
	}
	synced(t, rs...)
	rs[0].trip(t)
	waitFor(t, "the other replica open", func() bool { return rs[1].br.State().Remote })
	state, err := st.Master.Client().HGet(context.Background(), stateKey, "state").Result()
	require.NoError(t, err)
	assert.Equal(t, "open", state, "written on the master the Sentinel names")

	c := redis.NewFailoverClient(st.Options())
	defer c.Close()
	q, err := rampartredis.NewQuota(c, rampartredis.QuotaConfig{Key: "partner", Limit: 100, Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer q.Close()
	assert.Zero(t, q.Stats().Failures, "the first lease was answered by the master")
	assert.Equal(t, rate.Limit(100), q.Stats().Share)
}

func TestSentinel_FL20_FailoverMidRun(t *testing.T) {
	st := redistest.StartSentinels(t)
	killedMidRun(t, func() redis.UniversalClient { return redis.NewFailoverClient(st.Options()) },
		st.Master.Kill, st.WaitPromoted, // the Sentinel promotes the replica
		func() map[string]string {
			m, err := st.Replica.Client().HGetAll(context.Background(), stateKey).Result()
			require.NoError(t, err)
			return m
		})
	assert.Equal(t, st.Replica.Addr, st.MasterAddr())
}
