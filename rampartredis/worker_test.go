package rampartredis_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
)

// These tests inject the faults of a real deployment (a restart, a
// partition, a slow probe) against a real redis-server, and wait for
// outcomes, never for durations (see breaker_test.go).

// record returns the shared record's fields as Redis holds them.
func recordFields(t *testing.T, srv *redistest.Server) map[string]string {
	t.Helper()
	m, err := srv.Client().HGetAll(context.Background(), stateKey).Result()
	require.NoError(t, err)
	return m
}

// callUntil makes calls through each replica's breaker, each from its own
// goroutine, reporting every admitted call with outcome, until stop is
// closed; it returns how many calls each admitted as a probe (in
// HalfOpen) and how many it refused.
func callUntil(rs []*replica, outcome error, stop <-chan struct{}) (probes, refused []*atomic.Int32, wait func()) {
	probes, refused = make([]*atomic.Int32, len(rs)), make([]*atomic.Int32, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		probes[i], refused[i] = new(atomic.Int32), new(atomic.Int32)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, err := r.br.TryAcquire()
				if err != nil {
					refused[i].Add(1)
					time.Sleep(time.Millisecond) // pacing, not a wait
					continue
				}
				if r.br.State().State == circuitbreaker.HalfOpen {
					probes[i].Add(1) // this goroutine is the breaker's only caller
				}
				p.Done(outcome)
				time.Sleep(time.Millisecond)
			}
		})
	}
	return probes, refused, wg.Wait
}

func sum(ns []*atomic.Int32) int32 {
	var s int32
	for _, n := range ns {
		s += n.Load()
	}
	return s
}

func TestShare_FL15_RestartedFleetProbesARecordWhoseCooldownEnded(t *testing.T) {
	srv := server(t)
	// An Open record left by an earlier fleet (a redeploy after an
	// incident), its cool-down long over.
	require.NoError(t, srv.Client().HSet(context.Background(), stateKey,
		"gen", 7, "state", "open", "until", 1, "cause", "backend down", "by", "old").Err())
	// A lost claim holds a replica Open for an hour: only the round's
	// winner probing, and publishing its verdict, can close the fleet.
	opts, scfg := patient(srv.Options(), rampartredis.Config{ProbeClaim: time.Hour})
	rs := fleet(t, opts, 3, breakerConfig(), scfg)
	synced(t, rs...)
	stop := make(chan struct{})
	probes, _, wait := callUntil(rs, nil, stop) // a healthy dependency
	waitFor(t, "the record closed", func() bool { return recordFields(t, srv)["state"] == "closed" })
	for _, r := range rs {
		waitFor(t, "every replica closed", stateIs(r.br, circuitbreaker.Closed))
	}
	close(stop)
	wait()
	assert.Equal(t, int32(1), sum(probes), "one probe fleet-wide closed the fleet")
	assert.Equal(t, "8", recordFields(t, srv)["gen"])
}

func TestShare_FL2_AReplicaWithoutCallsGivesTheRoundUp(t *testing.T) {
	srv := server(t)
	// The record of an incident whose cool-down is long over (FL15).
	require.NoError(t, srv.Client().HSet(context.Background(), stateKey,
		"gen", 7, "state", "open", "until", 1, "cause", "backend down", "by", "old").Err())
	opts, scfg := patient(srv.Options(), rampartredis.Config{ProbeClaim: 5 * time.Second, Refresh: 200 * time.Millisecond})
	// The first replica up claims the round and gets no call (not yet
	// in the load balancer, or one whose traffic never needs this
	// dependency); the two that come up next serve the traffic.
	idle := join(t, opts, breakerConfig(), scfg)
	synced(t, idle)
	require.Equal(t, circuitbreaker.HalfOpen, idle.br.State().State, "the first replica up holds the round")
	busy := fleet(t, opts, 2, breakerConfig(), scfg)
	synced(t, busy...)
	stop := make(chan struct{})
	probes, _, wait := callUntil(busy, nil, stop) // a healthy dependency
	// The idle replica gives the round up halfway through its claim, and a
	// busy one takes it at its next read, probes and closes the fleet. It
	// used to take the round back at its own next read, which renewed its
	// claim, so the fleet stayed open as long as it got no call.
	waitFor(t, "the record closed", func() bool { return recordFields(t, srv)["state"] == "closed" })
	for _, r := range append(busy, idle) {
		waitFor(t, "every replica closed", stateIs(r.br, circuitbreaker.Closed))
	}
	close(stop)
	wait()
	assert.Equal(t, int32(1), sum(probes), "one probe fleet-wide closed the fleet")
	assert.Equal(t, "8", recordFields(t, srv)["gen"])
}

func TestShare_FL16_AReplicaCutOffAdoptsTheRecordItFinds(t *testing.T) {
	cutOffAdopts(t, single(t))
}

// cutOffAdopts: a replica cut off from Redis (top's proxies) while the
// fleet opens trips alone, and adopts the fleet's record when it is back.
func cutOffAdopts(t *testing.T, top topology) {
	cfg := breakerConfig()
	cfg.CoolDown = time.Minute
	scfg := rampartredis.Config{Timeout: top.timeout, Refresh: 50 * time.Millisecond, MaxBackoff: 2 * top.timeout}
	scfg.ID = "r0"
	r0 := joinWith(t, top.direct(), cfg, scfg)
	scfg.ID = "r1"
	r1 := joinWith(t, top.direct(), cfg, scfg)
	scfg.ID = "cut"
	c, proxies := top.proxied(t)
	cut := joinWith(t, c, cfg, scfg)
	synced(t, r0, r1, cut)

	proxies.Cut()
	r0.trip(t)
	waitFor(t, "the fleet open", stateIs(r1.br, circuitbreaker.Open))
	cut.trip(t) // alone: its trip cannot be written
	waitFor(t, "a failed command", func() bool { return cut.sh.Stats().Failures >= 1 })
	proxies.Heal()
	waitFor(t, "the cut-off replica on the record", func() bool { return cut.br.State().Remote })

	rec := top.record(t)
	assert.Equal(t, "1", rec["gen"], "the fleet's record was not overwritten")
	assert.Equal(t, "r0", rec["by"])
	var fe *rampartredis.FleetOpenError
	require.ErrorAs(t, cut.br.State().Cause, &fe)
	assert.Equal(t, "r0", fe.By)
	assert.Equal(t, int64(0), cut.sh.Stats().Published)
}

func TestShare_FL16_KilledRedisRestartsWithOneRecord(t *testing.T) {
	srv := server(t)
	cfg := breakerConfig()
	cfg.CoolDown = time.Minute
	rs := fleet(t, srv.Options(), 4, cfg, rampartredis.Config{Timeout: 100 * time.Millisecond, Refresh: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	synced(t, rs...)
	srv.Kill()
	for _, r := range rs {
		r.trip(t) // each alone
	}
	for _, r := range rs {
		waitFor(t, "a failed command", func() bool { return r.sh.Stats().Failures >= 1 })
	}
	srv.Restart() // empty: the first replica back writes its trip, the others adopt it
	for _, r := range rs {
		waitFor(t, "every replica on the record", func() bool { return r.br.State().Remote })
	}
	var published int64
	for _, r := range rs {
		published += r.sh.Stats().Published
	}
	assert.Equal(t, int64(1), published, "one trip written; the others adopted it")
	assert.Equal(t, "1", recordFields(t, srv)["gen"])
}

func TestShare_FL17_AVerdictAfterItsClaimLapsedChangesNothing(t *testing.T) {
	lateVerdict(t, single(t))
}

// lateVerdict: the round's winner is cut off (top's proxies) after it
// admitted its probe; its success, arriving after its claim lapsed,
// changes nothing, and the next claimant's verdict decides.
func lateVerdict(t *testing.T, top topology) {
	cfg := breakerConfig()
	cfg.CoolDown = 200 * time.Millisecond
	// A Timeout that a loaded machine's Redis meets (a cluster's too):
	// past it, the probing replica's renewal of its claim fails and its
	// claim lapses (its verdict then rightly changes nothing), which is
	// not what this tests.
	scfg := rampartredis.Config{Timeout: time.Second, ProbeClaim: 2500 * time.Millisecond, Refresh: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	// Each replica reaches Redis through its own proxies, so that
	// whichever wins the round can be cut off.
	proxies := make([]redistest.Proxies, 3)
	rs := make([]*replica, 3)
	for i := range rs {
		var c redis.UniversalClient
		c, proxies[i] = top.proxied(t)
		scfg.ID = string(rune('a' + i))
		rs[i] = joinWith(t, c, cfg, scfg)
	}
	synced(t, rs...)
	rs[0].trip(t)
	for _, r := range rs {
		waitFor(t, "every replica open", func() bool { return r.br.State().Remote })
	}
	// The round's winner admits its probe, then is cut off: its claim
	// lapses and another replica wins the next claim and probes.
	probe := func(except int) (int, *circuitbreaker.Permit) {
		var idx int
		var p *circuitbreaker.Permit
		waitFor(t, "a probe", func() bool {
			for i, r := range rs {
				if i == except {
					continue
				}
				if q, err := r.br.TryAcquire(); err == nil {
					idx, p = i, &q
					return true
				}
			}
			return false
		})
		return idx, p
	}
	a, pa := probe(-1)
	proxies[a].Cut()
	b, pb := probe(a)
	gen := top.record(t)["gen"]

	// The first probe's success arrives late: the fleet stays open, and
	// the late replica adopts the record.
	require.True(t, pa.Success())
	proxies[a].Heal()
	waitFor(t, "the late replica back on the record", func() bool {
		s := rs[a].br.State()
		return s.Remote && s.State == circuitbreaker.Open
	})
	rec := top.record(t)
	assert.Equal(t, "open", rec["state"], "a late verdict does not close the fleet")
	assert.Equal(t, gen, rec["gen"])

	// The current round's verdict counts.
	require.True(t, pb.Failure(errBackend))
	waitFor(t, "the re-open written", func() bool { return top.record(t)["gen"] != gen })
	rec = top.record(t)
	assert.Equal(t, "open", rec["state"])
	assert.Equal(t, string(rune('a'+b)), rec["by"])
}

// lockstep runs rounds in which every replica makes one call to a
// backend that fails, all at once, until every replica refuses, and
// returns how many calls reached the backend. A round starts once the
// previous one's failures have been reported and, if the record opened,
// every replica has applied it: calls spaced wider than a Redis round
// trip. That makes the count independent of the machine's speed.
func lockstep(t *testing.T, srv *redistest.Server, rs []*replica) int {
	t.Helper()
	failed := 0
	for {
		var admitted atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, r := range rs {
			wg.Go(func() {
				<-start
				if p, err := r.br.TryAcquire(); err == nil {
					admitted.Add(1)
					p.Failure(errBackend)
				}
			})
		}
		close(start)
		wg.Wait()
		if admitted.Load() == 0 {
			return failed
		}
		failed += int(admitted.Load())
		waitFor(t, "the round's failures reported", func() bool {
			var n int64
			for _, r := range rs {
				n += r.sh.Stats().Reported
			}
			return n == int64(failed)
		})
		if recordFields(t, srv)["state"] == "open" {
			for _, r := range rs {
				waitFor(t, "every replica on the open record", func() bool { return r.br.State().Remote })
			}
		}
	}
}

func TestShare_FL19_LockstepFailuresOpenTheFleetLikeOneBreaker(t *testing.T) {
	srv := server(t)
	cfg := breakerConfig()
	cfg.Policy, cfg.CoolDown = circuitbreaker.Consecutive{Failures: 5}, time.Minute
	opts, scfg := patient(srv.Options(), rampartredis.Config{Failures: 5, CoolDown: time.Minute})
	rs := fleet(t, opts, 8, cfg, scfg)
	synced(t, rs...)
	failed := lockstep(t, srv, rs)
	// One breaker would let 5 failures through, 8 independent ones 40
	// (5 each). The fleet opens once 5 are reported, but the round that
	// reports them made 8 calls at once: 8, where the target is at most 10.
	t.Logf("failing calls before every replica refused: %d (one breaker: 5, independent: 40)", failed)
	assert.LessOrEqual(t, failed, 10)
	assert.GreaterOrEqual(t, failed, 5)
	rec := recordFields(t, srv)
	assert.Equal(t, "open", rec["state"])
	assert.Equal(t, "backend down", rec["cause"])
	for _, r := range rs {
		snap := r.br.State()
		assert.Equal(t, circuitbreaker.Open, snap.State)
		assert.LessOrEqual(t, snap.RetryAfter, time.Minute+scfg.Timeout, "the evidence's Open lasts CoolDown")
		assert.Greater(t, snap.RetryAfter, 30*time.Second)
	}

	// Without evidence, the same fleet shares only the first trip, which
	// comes in the fifth round: 32 failures before it, and up to 8 in it.
	srv2 := server(t)
	opts2, scfg2 := patient(srv2.Options(), rampartredis.Config{})
	verdicts := fleet(t, opts2, 8, cfg, scfg2)
	synced(t, verdicts...)
	n := 0
	for !every(verdicts, circuitbreaker.Open) {
		for _, r := range verdicts {
			if p, err := r.br.TryAcquire(); err == nil {
				n++
				p.Failure(errBackend)
			}
		}
	}
	t.Logf("sharing verdicts only: %d", n)
	assert.Greater(t, n, 32)
	assert.LessOrEqual(t, n, 40)
}

// every reports whether each of rs is in state st.
func every(rs []*replica, st circuitbreaker.State) bool {
	for _, r := range rs {
		if r.br.State().State != st {
			return false
		}
	}
	return true
}

func TestShare_FL19_EvidenceHonoursQuorumAndWindow(t *testing.T) {
	srv := server(t)
	c := srv.Client()
	ctx := context.Background()
	cfg := breakerConfig()
	cfg.Policy = circuitbreaker.Consecutive{Failures: 100}
	const window = 300 * time.Millisecond
	rs := fleet(t, srv.Options(), 2, cfg, rampartredis.Config{Failures: 3, Quorum: 2, FailureWindow: window, Refresh: 20 * time.Millisecond})
	synced(t, rs...)
	fail := func(r *replica, n int) {
		before := r.sh.Stats().Reported
		for range n {
			p, err := r.br.TryAcquire()
			require.NoError(t, err)
			p.Failure(errBackend)
		}
		waitFor(t, "the failures reported", func() bool { return r.sh.Stats().Reported == before+int64(n) })
	}
	fail(rs[0], 3)
	assert.Equal(t, "closed", recordState(t, c), "3 failures from one replica are not a quorum of 2")
	assert.Equal(t, "3", c.Get(ctx, "rampart:{payments}:failures").Val())
	waitFor(t, "the window to end", func() bool { return c.Exists(ctx, "rampart:{payments}:failures").Val() == 0 })
	fail(rs[1], 1)
	assert.Equal(t, "closed", recordState(t, c), "the first replica's failures are outside the window")
	fail(rs[0], 2)
	waitFor(t, "the fleet open", func() bool { return recordState(t, c) == "open" })
	for _, r := range rs {
		waitFor(t, "every replica open", stateIs(r.br, circuitbreaker.Open))
	}
	assert.Equal(t, int64(0), c.Exists(ctx, "rampart:{payments}:failures", "rampart:{payments}:failed").Val(), "the count starts again")
}

// gate is a go-redis hook that holds every script a client sends while it
// is shut: a replica's reply that Redis (or the network) is slow to give.
type gate struct {
	mu   sync.Mutex
	shut chan struct{} // nil: open
	held atomic.Int32  // scripts waiting at the gate now
}

func (g *gate) close() { g.mu.Lock(); g.shut = make(chan struct{}); g.mu.Unlock() }
func (g *gate) open()  { g.mu.Lock(); close(g.shut); g.shut = nil; g.mu.Unlock() }

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }
func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		g.mu.Lock()
		shut := g.shut
		g.mu.Unlock()
		if shut != nil && strings.HasPrefix(cmd.Name(), "eval") {
			g.held.Add(1)
			defer g.held.Add(-1)
			select {
			case <-shut:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func TestShare_FL19_AnOpenArrivesWhileTheReplicasReportWaits(t *testing.T) {
	// A replica whose own report of a failure is slow to be answered
	// applies the Open that another replica's report made as soon as it
	// arrives by pub/sub: its calls are refused then, not once its own
	// reply comes (8 replicas in lockstep on a loaded machine let a round
	// more through when they waited).
	srv := server(t)
	cfg := breakerConfig()
	cfg.Policy, cfg.CoolDown = circuitbreaker.Consecutive{Failures: 100}, time.Minute
	opts, scfg := patient(srv.Options(), rampartredis.Config{Failures: 2, CoolDown: time.Minute, Refresh: time.Hour})
	// a's report is held at the gate until the test opens it, past its
	// Timeout only if b's evidence takes that long to reach a: on a
	// loaded machine, more than patient's 2s.
	scfg.Timeout, scfg.ProbeClaim = 20*time.Second, time.Minute
	g := new(gate)
	slow := redis.NewClient(opts)
	slow.AddHook(g)
	a := joinWith(t, slow, cfg, scfg)
	b := join(t, opts, cfg, scfg)
	synced(t, a, b)
	c := srv.Client()
	waitFor(t, "both subscribed", func() bool {
		return c.PubSubNumSub(context.Background(), changesChannel).Val()[changesChannel] == 2
	})
	// a's two reads (at startup and on subscribing) are done: the only
	// script it sends from now on is its report.
	waitFor(t, "a's reads done", func() bool { return a.sh.Stats().Commands == 2 })
	g.close()
	fail := func(r *replica) {
		p, err := r.br.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBackend)
	}
	fail(a)
	waitFor(t, "a's report held", func() bool { return g.held.Load() == 1 })
	fail(b)
	fail(b)
	waitFor(t, "a open by b's evidence while its own report waits", func() bool { return a.br.State().Remote })
	assert.Equal(t, int32(1), g.held.Load(), "a's report is still held")
	_, err := a.br.TryAcquire()
	require.ErrorIs(t, err, rampartredis.ErrFleetOpen)
	g.open()
	waitFor(t, "a's report answered", func() bool { return a.sh.Stats().Reported == 1 })
	assert.True(t, a.br.State().Remote, "the reply (the fleet open, nothing counted) changes nothing")
	assert.Equal(t, "open", recordState(t, c))
}

func TestShare_FL19_TheFirstReportTakesOneRoundTrip(t *testing.T) {
	firstReport(t, single(t))
}

func TestShare_FL19_TheFirstReportTakesOneRoundTripOnACluster(t *testing.T) {
	firstReport(t, onCluster(t))
}

// A replica that takes over from its master already knows the workers'
// scripts: Redis does not replicate its script cache, so the hub loads
// them on the replicas too, and a takeover costs no report a NOSCRIPT.
func TestCluster_FL19_AReplicaKnowsTheWorkersScriptsBeforeItTakesOver(t *testing.T) {
	cl := redistest.StartReplicatedCluster(t)
	_, scfg := patient(&redis.Options{}, rampartredis.Config{Refresh: 50 * time.Millisecond})
	cc := redis.NewClusterClient(cl.Options())
	r := joinWith(t, cc, breakerConfig(), scfg)
	synced(t, r)
	admin := cl.Client()
	ctx := context.Background()
	// Redis lists a replica in CLUSTER SLOTS (so go-redis knows it) once
	// it has received data: a write on each master ("a", "b" and "c" are
	// in the three masters' slots). Then the hub loads again: its read
	// meets NOSCRIPT after the flush.
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, admin.Set(ctx, k, "1", 0).Err())
	}
	waitFor(t, "every node to list the three replicas", func() bool {
		for _, n := range cl.Nodes {
			c := redis.NewClient(n.Options())
			//lint:ignore SA1019 go-redis's cluster client learns its nodes from CLUSTER SLOTS, so the test asks what the client will see
			slots, err := c.ClusterSlots(ctx).Result()
			c.Close()
			listed := 0
			for _, s := range slots {
				listed += len(s.Nodes) - 1
			}
			if err != nil || listed != 3 {
				return false
			}
		}
		return true
	})
	// The replica's client learnt the cluster's layout when it joined,
	// before the replicas were listed; go-redis reloads it lazily (on an
	// error, or a stale state's next use), so without this the load after
	// the flush could still go to the masters alone (it did at load 12).
	waitFor(t, "the replica's client to know the three replicas", func() bool {
		cc.ReloadState(ctx)
		var known atomic.Int32
		err := cc.ForEachSlave(ctx, func(context.Context, *redis.Client) error { known.Add(1); return nil })
		return err == nil && known.Load() == 3
	})
	require.NoError(t, admin.ScriptFlush(ctx).Err())
	cached := func(n *redistest.Server) (replica bool, scripts string) {
		c := redis.NewClient(n.Options())
		defer c.Close()
		info, err := c.Info(ctx, "replication", "memory").Result()
		require.NoError(t, err)
		_, scripts, _ = strings.Cut(info, "number_of_cached_scripts:")
		scripts, _, _ = strings.Cut(scripts, "\r\n")
		return strings.Contains(info, "role:slave"), scripts
	}
	replicas := 0
	for _, n := range cl.Nodes {
		if replica, _ := cached(n); replica {
			replicas++
			// The evidence, transition, claim and release scripts, and nothing run
			// there.
			waitFor(t, "the workers' scripts loaded on the replica "+n.Addr, func() bool {
				_, scripts := cached(n)
				return scripts == "4"
			})
		}
	}
	assert.Equal(t, 3, replicas)
}

// firstReport checks that a replica's first failure report after Redis
// started, and after Redis lost its scripts, is one script by SHA: the
// hub loads the workers' scripts when Redis does not know its read
// script, so no report is answered NOSCRIPT and sent again with its body
// (a second round trip on the path that opens the fleet in an outage).
func firstReport(t *testing.T, topo topology) {
	cfg := breakerConfig()
	cfg.Policy = circuitbreaker.Consecutive{Failures: 100}
	_, scfg := patient(&redis.Options{}, rampartredis.Config{Failures: 100, Refresh: 50 * time.Millisecond})
	c := topo.direct()
	resent := new(resentScripts)
	c.AddHook(resent)
	r := joinWith(t, c, cfg, scfg)
	synced(t, r)
	fail := func() {
		before := r.sh.Stats().Reported
		p, err := r.br.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBackend)
		waitFor(t, "the failure reported", func() bool { return r.sh.Stats().Reported == before+1 })
	}
	fail()
	assert.Equal(t, int32(0), resent.n.Load(), "the first report after Redis started was sent again with its body")

	admin := topo.direct()
	defer admin.Close()
	require.NoError(t, admin.ScriptFlush(context.Background()).Err())
	// The second read counted after the flush was sent after it: Redis
	// did not know the read script, and the hub loaded the others.
	n := r.sh.Stats().Commands
	waitFor(t, "two reads after the flush", func() bool { return r.sh.Stats().Commands >= n+2 })
	fail()
	assert.Equal(t, int32(0), resent.n.Load(), "the first report after Redis lost its scripts was sent again with its body")
}

// resentScripts is a go-redis hook that counts the scripts of a Shared's
// worker (five keys: state, probe, reports, failures, failed) sent with
// their body, which Script.Run does after Redis answers NOSCRIPT.
type resentScripts struct{ n atomic.Int32 }

func (h *resentScripts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *resentScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *resentScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "eval" && len(args) > 2 && fmt.Sprint(args[2]) == "5" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
