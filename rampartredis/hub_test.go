package rampartredis_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
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
	return manyOf(t, opts, name, n, breakerConfig(), scfg)
}

// manyOf is many with breakers configured by bcfg (their Names set).
func manyOf(t *testing.T, opts *redis.Options, name string, n int, bcfg circuitbreaker.Config, scfg rampartredis.Config) []*replica {
	t.Helper()
	o := *opts
	o.ClientName = name
	c := redis.NewClient(&o)
	t.Cleanup(func() { c.Close() }) // after every Shared closed
	rs := make([]*replica, n)
	for i := range rs {
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

// subscribed returns a condition: the channel of each of k0…k(n-1) has
// want subscribers.
func subscribed(t *testing.T, c *redis.Client, n int, want int64) func() bool {
	channels := make([]string, n)
	for i := range channels {
		channels[i] = channelOf("k" + strconv.Itoa(i))
	}
	return func() bool {
		for _, v := range numsub(t, c, channels...) {
			if v != want {
				return false
			}
		}
		return true
	}
}

// reading starts one replica of n breakers reading every 20ms on a
// server of its own, and returns them once each has read past the reads
// on subscribing, with a client for the test's queries.
func reading(t *testing.T, n int) ([]*replica, *redis.Client) {
	t.Helper()
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{Refresh: 20 * time.Millisecond})
	rs := many(t, opts, "replica", n, scfg)
	synced(t, rs...)
	readAfterNow(t, rs...)
	return rs, admin(t, srv)
}

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
	waitFor(t, "every channel subscribed by both replicas", subscribed(t, c, 50, 2))
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
// On a loaded machine a worker that takes its read late misses the
// round's window and is read on its own once before it rejoins (runs
// under -race at a load of 13 counted 13 and 15 scripts for 10 and 13
// reads per breaker, 1 run in 20 to 60), so the bound is twice the reads:
// unbatched, the count would be fifty times them.
func TestHub_FL21_OneScriptReadsEveryRecord(t *testing.T) {
	rs, c := reading(t, 50)
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
	assert.LessOrEqual(t, scripts, 2*hi, "one script per refresh, a late read on its own now and then: reads per breaker %d..%d", lo, hi)
}

// Redis killed and restarted empty with 2×50 breakers: every channel is
// subscribed again, also after reconnections that failed (Redis down for
// a while: ioredis lost its subscriptions when more than one attempt
// failed) and after two pub/sub disconnections in quick succession
// (StackExchange.Redis resubscribed only part of 1,000 channels when a
// second reconnection came mid-way); a trip after it reaches the other
// replica by pub/sub (reads are hourly).
func TestHub_FL21_RestartResubscribesEveryBreaker(t *testing.T) {
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{Refresh: time.Hour})
	a := many(t, opts, "replica-a", 50, scfg)
	b := many(t, opts, "replica-b", 50, scfg)
	synced(t, append(a, b...)...)
	c := admin(t, srv)
	everySubscribed := subscribed(t, c, 50, 2)
	waitFor(t, "every channel subscribed by both replicas", everySubscribed)
	srv.Kill()
	time.Sleep(5 * time.Second) // the pub/sub's reconnections fail, backing off
	srv.Restart()
	waitFor(t, "every channel subscribed again by both replicas", everySubscribed)
	srv.KillPubSub()
	srv.KillPubSub()
	waitFor(t, "every channel subscribed after two disconnections", everySubscribed)
	for _, i := range []int{0, 23, 49} {
		a[i].trip(t)
		waitFor(t, fmt.Sprintf("k%d open on replica b", i), stateIs(b[i].br, circuitbreaker.Open))
	}
	for _, name := range []string{"replica-a", "replica-b"} {
		assert.Equal(t, 1, connections(t, c, name)["pubsub"], name)
	}
}

// Redis forgets the scripts (SCRIPT FLUSH; a restart or a failover does
// the same): the batched read, which sends scripts by their SHA in a
// pipeline, where go-redis's Script.Run cannot fall back to EVAL, sends
// them again with their body, and no read fails.
func TestHub_FL21_ReadsSurviveAScriptFlush(t *testing.T) {
	rs, c := reading(t, 20)
	failures := rs[3].sh.Stats().Failures
	ctx := context.Background()
	require.NoError(t, c.ScriptFlush(ctx).Err())
	require.NoError(t, c.HSet(ctx, "rampart:{k3}:state", "gen", 1, "state", "open", "until", -1, "cause", "", "by", "x").Err())
	waitFor(t, "k3 opened by a read", stateIs(rs[3].br, circuitbreaker.Open))
	assert.Equal(t, failures, rs[3].sh.Stats().Failures, "no read failed")
	assert.Equal(t, circuitbreaker.Closed, rs[4].br.State().State)
}

// A replica of 200 breakers behind a link too narrow to carry a read of
// all their records within Timeout (2 KB/s per connection: 200 records
// are about 9 KB, 4.5 s, against a Timeout of 2 s). A Redis, or a
// process, too starved of CPU to answer 1,000 records within Timeout is
// the same case: the scale benchmark's trip storm did not reach every
// replica at a load of 27 because such a replica's reads failed every
// time. Each read failed for every breaker, so none synced and, each
// breaker taking Redis for down, none published its own trip. The hub
// reads in smaller parts until they fit: every breaker syncs, is read
// again a Refresh later, its trips reach the other replica, and the
// other's reach it.
func TestHub_FL23_ASlowLinkReadsEveryBreakerInParts(t *testing.T) {
	const n = 200
	srv := server(t)
	// Reads every 10 s: the link carries the 200 records of a round
	// (0.9 KB/s), only not in one part within Timeout.
	opts, scfg := patient(srv.Options(), rampartredis.Config{Refresh: 10 * time.Second})
	bcfg := breakerConfig()
	bcfg.CoolDown = time.Hour // the trips stay open while checked
	fast := manyOf(t, opts, "fast", n, bcfg, scfg)
	// The slow replica starts cut off (Redis unreachable), so that its
	// breakers' reads are due together once it can reach Redis, as they
	// are from the second Refresh on.
	p := redistest.NewProxy(t, srv.Addr)
	p.Cut()
	slow := manyOf(t, via(opts, p.Addr), "slow", n, bcfg, scfg)
	waitFor(t, "a failed read of every breaker of the cut-off replica", func() bool {
		for _, r := range slow {
			if r.sh.Stats().Failures == 0 {
				return false
			}
		}
		return true
	})
	p.Throttle(2000)
	p.Heal()
	synced(t, fast...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i, r := range slow {
		require.NoError(t, r.sh.WaitSynced(ctx), "k%d of the slow replica synced", i)
	}
	// A Refresh later each is read again, and its trip is written at once.
	before := make([]int64, n)
	for i, r := range slow {
		before[i] = r.sh.Stats().Commands
	}
	waitWithin(t, 2*time.Minute, "a periodic read of every breaker of the slow replica", func() bool {
		for i, r := range slow {
			if r.sh.Stats().Commands == before[i] {
				return false
			}
		}
		return true
	})
	const tripped = 20
	for _, r := range slow[:tripped] {
		r.trip(t)
	}
	for _, r := range fast[n-tripped:] {
		r.trip(t)
	}
	waitWithin(t, 2*time.Minute, "every trip on both replicas", func() bool {
		for i := range tripped {
			if fast[i].br.State().State != circuitbreaker.Open || slow[n-tripped+i].br.State().State != circuitbreaker.Open {
				return false
			}
		}
		return true
	})
	assert.Equal(t, circuitbreaker.Closed, fast[tripped].br.State().State, "an untripped breaker stays closed")
}

// A storm: one replica trips its 500 breakers at once while Redis stalls
// for longer than Timeout (CLIENT PAUSE, 3 s, against a Timeout of 2 s;
// a loaded machine's Redis, or one busy with a slow command). Sent all at
// once, the 500 transition scripts would each wait in go-redis's pool
// with its Timeout running and time out together (and, in the scale
// benchmark at a load of 35, go on failing together: 131 of 1,000 trips
// written after 3 minutes). The hub lets a few scripts through at a
// time, so only those in flight when Redis stalled time out; the others
// wait their turn, and every trip reaches the other replica.
func TestHub_FL23_AStormOfTripsWaitsItsTurn(t *testing.T) {
	const n = 500
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{Refresh: time.Hour})
	bcfg := breakerConfig()
	bcfg.CoolDown = time.Hour
	tripper := manyOf(t, opts, "tripper", n, bcfg, scfg)
	other := manyOf(t, opts, "other", n, bcfg, scfg)
	synced(t, append(tripper, other...)...)
	c := admin(t, srv)
	waitFor(t, "every channel subscribed by both replicas", subscribed(t, c, n, 2))
	failures := func() (n int64) {
		for _, r := range tripper {
			n += r.sh.Stats().Failures
		}
		return n
	}
	before := failures()
	require.NoError(t, c.Do(context.Background(), "CLIENT", "PAUSE", 3000, "ALL").Err())
	for _, r := range tripper {
		r.trip(t)
	}
	waitWithin(t, time.Minute, "every trip on the other replica", func() bool {
		for _, r := range other {
			if r.br.State().State != circuitbreaker.Open {
				return false
			}
		}
		return true
	})
	assert.Less(t, failures()-before, int64(n/10), "only the scripts in flight when Redis stalled failed")
}

// A message that reaches the replica in pieces more than a second apart
// (a slow link, or a process starved that long mid-message) is not lost:
// go-redis parses the rest of a message whose read timed out midway as
// replies of their own, its channel and payload as Pongs, without an error
// (go-redis issue 1702), so the hub reads pub/sub without a deadline. With
// hourly reads, the trip reaches the other replica by its message alone.
func TestHub_FL23_AMessageCutMidwayIsNotLost(t *testing.T) {
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{Refresh: time.Hour})
	bcfg := breakerConfig()
	bcfg.CoolDown = time.Minute
	tripper := join(t, opts, bcfg, scfg)
	p := redistest.NewProxy(t, srv.Addr)
	p.StallAfter([]byte("$7\r\nmessage\r\n"), 1500*time.Millisecond)
	other := join(t, via(opts, p.Addr), bcfg, scfg)
	synced(t, tripper, other)
	c := admin(t, srv)
	waitFor(t, "both replicas subscribed", func() bool { return numsub(t, c, channelOf("payments"))[channelOf("payments")] == 2 })
	waitFor(t, "the reads on starting and on subscribing", func() bool { return other.sh.Stats().Commands >= 2 })
	reads := other.sh.Stats().Commands
	tripper.trip(t)
	waitFor(t, "the trip to reach the other replica", stateIs(other.br, circuitbreaker.Open))
	assert.Equal(t, reads, other.sh.Stats().Commands, "learnt by the message, not by a read")
}

// valueClient is a client of a user's that is a struct value, which
// cannot be a map key.
type valueClient struct {
	*redis.Client
	tags []string
}

// A client that is not a pointer works (it gets a hub of its own) and
// does not panic.
func TestHub_FL11_ValueClient(t *testing.T) {
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{})
	c := valueClient{Client: redis.NewClient(opts), tags: []string{"a"}}
	a := joinWith(t, c, breakerConfig(), scfg) // closes c
	b := join(t, opts, breakerConfig(), scfg)
	synced(t, a, b)
	a.trip(t)
	waitFor(t, "the trip shared", stateIs(b.br, circuitbreaker.Open))
}

// BenchmarkHub_FL21_ManyBreakers measures what shared breakers cost at
// scale: 32 replicas in one process, each with its own client and 1,000
// shared breakers (the same 1,000 keys on every replica, as a fleet of
// per-host breakers would have), against one redis-server, with the
// default Refresh (1s). It reports, once everything is subscribed and
// read:
//
//   - conns/replica: the most connections (CLIENT LIST) any replica holds;
//   - scripts/s/replica: the commands a replica sends per second (INFO
//     commandstats over 5s: at rest, a replica sends only its reads),
//     calls/s/replica the calls Redis makes for it, those inside the
//     scripts included (one HMGET per record read);
//   - breakerB: the heap (after GC) of one breaker alone;
//     heapB/shared, stackB/shared: the process's heap and goroutine
//     stacks that sharing adds, per shared breaker;
//   - redisB/breaker: Redis's used_memory per shared breaker while all are
//     Closed (no record: the subscriptions);
//   - redisB/record: used_memory per open record, after one replica
//     tripped all of its breakers (noisy: output buffers count too),
//     and recordB one's MEMORY USAGE;
//   - storm-s: the seconds from that replica's first trip until every
//     breaker of every other replica is Open (at most 3 minutes, or the
//     benchmark fails).
//
// The measurement runs once whatever b.N is:
//
//	cd rampartredis && go test -run='^$' -bench=ManyBreakers -benchtime=1x .
func BenchmarkHub_FL21_ManyBreakers(b *testing.B) {
	replicas, breakers := 32, 1000
	if v, err := strconv.Atoi(os.Getenv("RAMPART_REPLICAS")); err == nil {
		replicas = v
	}
	phase := time.Now()
	logPhase := func(what string) { b.Logf("%s: %v", what, time.Since(phase)); phase = time.Now() }
	srv := server(b)
	opts, scfg := patient(srv.Options(), rampartredis.Config{})
	ctx := context.Background()
	ac := redis.NewClient(opts)
	defer ac.Close()

	before := inProcess()
	mem0 := usedMemory(b, ac)
	type replicaOf struct {
		c   *redis.Client
		brs []*circuitbreaker.Breaker
		shs []*rampartredis.Shared
	}
	fleet := make([]replicaOf, replicas)
	for i := range fleet {
		o := *opts
		o.ClientName = "replica-" + strconv.Itoa(i)
		r := replicaOf{c: redis.NewClient(&o)}
		for j := range breakers {
			bcfg := breakerConfig()
			bcfg.Name = "host-" + strconv.Itoa(j)
			bcfg.CoolDown = time.Hour // the records stay open while measured
			br, err := circuitbreaker.New(bcfg)
			require.NoError(b, err)
			r.brs = append(r.brs, br)
		}
		fleet[i] = r
	}
	unshared := inProcess() // the breakers alone
	for i := range fleet {
		r := &fleet[i]
		for _, br := range r.brs {
			sh, err := rampartredis.Share(br, r.c, scfg)
			require.NoError(b, err)
			r.shs = append(r.shs, sh)
		}
	}
	defer func() {
		for _, r := range fleet {
			for _, sh := range r.shs {
				sh.Close()
			}
			r.c.Close()
		}
	}()
	logPhase("shared")
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute) // a loaded machine
	defer cancel()
	for _, r := range fleet {
		for _, sh := range r.shs {
			require.NoError(b, sh.WaitSynced(wctx))
		}
	}
	channels := make([]string, breakers)
	for j := range channels {
		channels[j] = channelOf("host-" + strconv.Itoa(j))
	}
	waitFor(b, "every channel subscribed by every replica", func() bool {
		n, err := ac.PubSubNumSub(ctx, channels...).Result()
		require.NoError(b, err)
		for _, v := range n {
			if v != int64(replicas) {
				return false
			}
		}
		return true
	})
	logPhase("synced and subscribed")
	after := inProcess()
	mem1 := usedMemory(b, ac)

	// Commands per second, over 5 refreshes.
	calls0, scripts0 := commandCalls(b, ac)
	start := time.Now()
	time.Sleep(5 * time.Second)
	calls1, scripts1 := commandCalls(b, ac)
	if os.Getenv("RAMPART_COMMANDSTATS") != "" {
		b.Log(ac.Info(ctx, "commandstats").Val())
	}
	secs := time.Since(start).Seconds()
	conns := 0
	list := ac.ClientList(ctx).Val()
	for i := range replicas {
		conns = max(conns, strings.Count(list, "name=replica-"+strconv.Itoa(i)+" "))
	}

	logPhase("measured")
	// A storm: one replica trips every breaker, 1,000 open records, and
	// every other replica must refuse through all of them.
	start = time.Now()
	for _, br := range fleet[0].brs {
		(&replica{br: br}).trip(b)
	}
	deadline := time.Now().Add(3 * time.Minute) // a loaded machine
	for {
		open := 0
		for _, r := range fleet[1:] {
			for _, br := range r.brs {
				if br.State().State == circuitbreaker.Open {
					open++
				}
			}
		}
		if open == (replicas-1)*breakers {
			break
		}
		if time.Now().After(deadline) {
			for i, r := range fleet[1:] {
				for j, br := range r.brs {
					if br.State().State != circuitbreaker.Open {
						b.Logf("replica-%d host-%d: %v %+v; tripper %+v", i+1, j, br.State().State, r.shs[j].Stats(), fleet[0].shs[j].Stats())
						break
					}
				}
			}
			b.Fatalf("%d of %d breakers of the other replicas open 3 minutes after the trips", open, (replicas-1)*breakers)
		}
		time.Sleep(100 * time.Millisecond)
	}
	converged := time.Since(start)
	logPhase("tripped and open on every replica")
	mem2 := usedMemory(b, ac)
	record, err := ac.MemoryUsage(ctx, "rampart:{host-0}:state").Result()
	require.NoError(b, err)

	n := float64(replicas * breakers)
	b.ReportMetric(float64(replicas), "replicas")
	b.ReportMetric(float64(conns), "conns/replica")
	b.ReportMetric(float64(calls1-calls0)/secs/float64(replicas), "calls/s/replica")
	b.ReportMetric(float64(scripts1-scripts0)/secs/float64(replicas), "scripts/s/replica")
	b.ReportMetric(float64(unshared.heap-before.heap)/n, "breakerB")
	b.ReportMetric(float64(after.heap-unshared.heap)/n, "heapB/shared")
	b.ReportMetric(float64(after.stack-unshared.stack)/n, "stackB/shared")
	b.ReportMetric(float64(mem1-mem0)/n, "redisB/breaker")
	b.ReportMetric(float64(mem2-mem1)/float64(breakers), "redisB/record")
	b.ReportMetric(converged.Seconds(), "storm-s")
	b.ReportMetric(float64(record), "recordB")
}

type memory struct{ heap, stack uint64 }

// inProcess returns the heap in use after a GC, and the goroutine stacks.
func inProcess() memory {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memory{heap: m.HeapAlloc, stack: m.StackInuse}
}

// usedMemory returns Redis's used_memory (INFO memory).
func usedMemory(b testing.TB, c *redis.Client) int64 {
	b.Helper()
	return infoInt(b, c, "memory", "used_memory")
}

func infoInt(b testing.TB, c *redis.Client, section, field string) int64 {
	b.Helper()
	info, err := c.Info(context.Background(), section).Result()
	require.NoError(b, err)
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(b, err)
			return n
		}
	}
	b.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// commandCalls returns how many commands Redis has run, and how many of
// them were scripts (INFO commandstats).
func commandCalls(b testing.TB, c *redis.Client) (all, scripts int64) {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(b, err)
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		v, err := strconv.ParseInt(calls, 10, 64)
		require.NoError(b, err)
		all += v
		if name == "cmdstat_evalsha" || name == "cmdstat_eval" {
			scripts += v
		}
	}
	return all, scripts
}
