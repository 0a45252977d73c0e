package rampartredis_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
)

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
//   - heapB/breaker, stackB/breaker: the process's heap (after GC) and
//     goroutine stacks per shared breaker, breakers included;
//   - redisB/breaker: Redis's used_memory per shared breaker while all are
//     Closed (no record: the subscriptions);
//   - redisB/record: used_memory per open record, after one replica
//     tripped all 1,000 breakers, and recordB its MEMORY USAGE.
//
// The measurement runs once whatever b.N is:
//
//	go test -run='^$' -bench=ManyBreakers -benchtime=1x ./rampartredis
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
			sh, err := rampartredis.Share(br, r.c, scfg)
			require.NoError(b, err)
			r.brs, r.shs = append(r.brs, br), append(r.shs, sh)
		}
		fleet[i] = r
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
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
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
	// One replica trips every breaker: 1,000 open records.
	for _, br := range fleet[0].brs {
		(&replica{br: br}).trip(b)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		open := 0
		for _, br := range fleet[replicas-1].brs {
			if br.State().State == circuitbreaker.Open {
				open++
			}
		}
		if open == breakers {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d breakers of the last replica open a minute after the trips", open, breakers)
		}
		time.Sleep(10 * time.Millisecond)
	}
	logPhase("tripped and propagated")
	mem2 := usedMemory(b, ac)
	record, err := ac.MemoryUsage(ctx, "rampart:{host-0}:state").Result()
	require.NoError(b, err)

	n := float64(replicas * breakers)
	b.ReportMetric(float64(replicas), "replicas")
	b.ReportMetric(float64(conns), "conns/replica")
	b.ReportMetric(float64(calls1-calls0)/secs/float64(replicas), "calls/s/replica")
	b.ReportMetric(float64(scripts1-scripts0)/secs/float64(replicas), "scripts/s/replica")
	b.ReportMetric(float64(after.heap-before.heap)/n, "heapB/breaker")
	b.ReportMetric(float64(after.stack-before.stack)/n, "stackB/breaker")
	b.ReportMetric(float64(mem1-mem0)/n, "redisB/breaker")
	b.ReportMetric(float64(mem2-mem1)/float64(breakers), "redisB/record")
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
