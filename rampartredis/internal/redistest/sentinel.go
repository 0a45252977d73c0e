package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name under which a [Sentinels]'s Sentinel monitors
// its master.
const MasterName = "rampart"

// Sentinels is a master, a replica of it and a Redis Sentinel that
// monitors them (quorum 1, the master down after 500ms), each a
// redis-server started for one test on 127.0.0.1 (the Sentinel is
// redis-server --sentinel with a config file of its own) and stopped by
// its PID when the test ends. When the master dies, the Sentinel promotes
// the replica.
type Sentinels struct {
	t        testing.TB
	Master   *Server
	Replica  *Server
	Sentinel *Server
}

// StartSentinels starts the three servers for t and waits until the
// replica is in sync and the Sentinel knows both.
func StartSentinels(t testing.TB) *Sentinels {
	t.Helper()
	st := &Sentinels{t: t, Master: Start(t)}
	st.Replica = startWith(t, func(s *Server) { s.args = []string{"--replicaof", "127.0.0.1", fmt.Sprint(st.Master.Port())} })
	dir := t.TempDir()
	st.Sentinel = startWith(t, func(s *Server) {
		s.conf = filepath.Join(dir, "sentinel.conf")
		conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %[1]s 500\nsentinel failover-timeout %[1]s 5000\n", MasterName, st.Master.Port())
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			t.Fatalf("redistest: sentinel config: %v", err)
		}
		s.args = []string{"--sentinel", "--dir", dir}
	})
	rc, sc := st.Replica.Client(), st.sentinel()
	st.wait("the replica in sync and known to the Sentinel", func(ctx context.Context) bool {
		info, err := rc.Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false
		}
		reps, err := sc.Replicas(ctx, MasterName).Result()
		return err == nil && len(reps) == 1
	})
	return st
}

// sentinel returns a client of the Sentinel, closed when the test ends.
func (st *Sentinels) sentinel() *redis.SentinelClient {
	c := redis.NewSentinelClient(&redis.Options{Addr: st.Sentinel.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	st.t.Cleanup(func() { c.Close() })
	return c
}

// MasterAddr returns the address the Sentinel gives for the master now.
func (st *Sentinels) MasterAddr() string {
	st.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := st.sentinel().GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil || len(a) != 2 {
		st.t.Fatalf("redistest: SENTINEL get-master-addr-by-name: %v %v", a, err)
	}
	return a[0] + ":" + a[1]
}

// WaitPromoted waits until the Sentinel names the replica as the master,
// failing the test after 30 seconds.
func (st *Sentinels) WaitPromoted() {
	st.t.Helper()
	sc := st.sentinel()
	st.wait("the replica promoted", func(ctx context.Context) bool {
		a, err := sc.GetMasterAddrByName(ctx, MasterName).Result()
		return err == nil && len(a) == 2 && a[0]+":"+a[1] == st.Replica.Addr
	})
}

// wait polls cond until it holds, failing the test after 30 seconds.
func (st *Sentinels) wait(what string, cond func(ctx context.Context) bool) {
	st.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ok := cond(ctx)
		cancel()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("redistest: timed out after 30s waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Options returns failover client options (go-redis's Sentinel client)
// with the short, context-respecting timeouts the package requires.
func (st *Sentinels) Options() *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName:            MasterName,
		SentinelAddrs:         []string{st.Sentinel.Addr},
		ContextTimeoutEnabled: true,
		DialTimeout:           200 * time.Millisecond,
		ReadTimeout:           200 * time.Millisecond,
		WriteTimeout:          200 * time.Millisecond,
		MaxRetries:            -1,
	}
}
