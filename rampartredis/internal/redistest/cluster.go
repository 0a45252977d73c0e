package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a real Redis Cluster of three masters, without replicas or
// with one each, started for one test on 127.0.0.1 (redis-server
// --cluster-enabled yes, once per node, joined by redis-cli --cluster
// create), each node stopped by its PID when the test ends.
type Cluster struct {
	t     testing.TB
	Nodes []*Server
}

// CLI returns the path of redis-cli, or fails (CI) or skips the test, as
// Binary does for redis-server.
func CLI(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-cli")
	if err == nil {
		return bin
	}
	const hint = "redis-cli is not on PATH; install it with: apt-get install -y --no-install-recommends redis-tools"
	if os.Getenv("CI") != "" {
		t.Fatal(hint + " (CI is set: these tests must not be skipped)")
	}
	t.Skip(hint)
	return ""
}

// StartCluster starts a three-master cluster for t and waits until every
// node reports cluster_state:ok.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return startCluster(t, 0)
}

// StartReplicatedCluster starts a cluster of three masters with a replica
// each (six nodes) for t and waits until every node reports
// cluster_state:ok. When a master dies, its replica takes over its slots
// (after the node timeout, 1s).
func StartReplicatedCluster(t testing.TB) *Cluster {
	t.Helper()
	return startCluster(t, 1)
}

func startCluster(t testing.TB, replicas int) *Cluster {
	t.Helper()
	cli := CLI(t)
	dir := t.TempDir()
	c := &Cluster{t: t}
	for i := range 3 * (1 + replicas) {
		s := startWith(t, func(s *Server) {
			s.args = []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", i)),
				"--cluster-node-timeout", "1000",
				"--repl-diskless-sync-delay", "0",
				"--dir", dir,
			}
		})
		c.Nodes = append(c.Nodes, s)
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		args = append(args, s.Addr)
	}
	args = append(args, "--cluster-replicas", fmt.Sprint(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitOK()
	if replicas > 0 {
		c.waitSynced()
	}
	return c
}

// waitSynced waits until every replica's link to its master is up: a
// replica that never synced does not take over (its data is too old).
func (c *Cluster) waitSynced() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err := cl.Info(ctx, "replication").Result()
			cancel()
			if err == nil && (strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("redistest: the replica %s is not in sync after 30s", s.Addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
}

// Addrs returns the nodes' addresses.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, s := range c.Nodes {
		a = append(a, s.Addr)
	}
	return a
}

// WaitOK waits until every node that runs (not killed) reports
// cluster_state:ok and knows every node, failing the test after 30
// seconds.
func (c *Cluster) WaitOK() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		for _, s := range c.Nodes {
			if s.Dead() {
				continue
			}
			cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err := cl.ClusterInfo(ctx).Result()
			cancel()
			cl.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", len(c.Nodes))) {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("redistest: the cluster on %v is not ok after 30s", c.Addrs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Options returns cluster client options with the short, context-
// respecting timeouts the package requires.
func (c *Cluster) Options() *redis.ClusterOptions {
	return &redis.ClusterOptions{
		Addrs:                 c.Addrs(),
		ContextTimeoutEnabled: true,
		DialTimeout:           200 * time.Millisecond,
		ReadTimeout:           200 * time.Millisecond,
		WriteTimeout:          200 * time.Millisecond,
		MaxRetries:            -1,
	}
}

// Client returns a new cluster client, closed when the test ends.
func (c *Cluster) Client() *redis.ClusterClient {
	cl := redis.NewClusterClient(c.Options())
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// Master returns the node that serves key's slot.
func (c *Cluster) Master(key string) *Server {
	c.t.Helper()
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := cl.MasterForKey(ctx, key)
	if err != nil {
		c.t.Fatalf("redistest: master for %q: %v", key, err)
	}
	addr := m.Options().Addr
	for _, s := range c.Nodes {
		if s.Addr == addr {
			return s
		}
	}
	c.t.Fatalf("redistest: master %s of %q is not a node of the cluster %v", addr, key, c.Addrs())
	return nil
}

// ProxiedOptions returns cluster client options whose every connection
// passes through a [Proxy] in front of its node, and the proxies: the
// client learns the nodes' real addresses from the cluster, and its
// Dialer sends each connection to that node's proxy, so that cutting the
// proxies partitions this client from the whole cluster and no other.
func (c *Cluster) ProxiedOptions() (*redis.ClusterOptions, Proxies) {
	c.t.Helper()
	byAddr := map[string]*Proxy{}
	var ps Proxies
	for _, s := range c.Nodes {
		p := NewProxy(c.t, s.Addr)
		byAddr[s.Addr] = p
		ps = append(ps, p)
	}
	o := c.Options()
	var d net.Dialer
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p, ok := byAddr[addr]; ok {
			addr = p.Addr
		}
		return d.DialContext(ctx, network, addr)
	}
	return o, ps
}

// Proxies are the proxies of one client, cut and healed together.
type Proxies []*Proxy

// Cut cuts every proxy.
func (ps Proxies) Cut() {
	for _, p := range ps {
		p.Cut()
	}
}

// Heal heals every proxy.
func (ps Proxies) Heal() {
	for _, p := range ps {
		p.Heal()
	}
}

// WaitTakenOver waits until a node other than old serves key's slot as
// its master and the cluster is ok again, failing the test after 30
// seconds: a replica took over from a killed master.
func (c *Cluster) WaitTakenOver(key string, old *Server) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl := redis.NewClusterClient(c.Options())
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m, err := cl.MasterForKey(ctx, key)
		cancel()
		moved := err == nil && m.Options().Addr != old.Addr
		cl.Close()
		if moved {
			c.WaitOK()
			return
		}
		if time.Now().After(deadline) {
			var nodes string
			for _, s := range c.Nodes {
				if !s.Dead() {
					nodes, _ = s.Client().ClusterNodes(context.Background()).Result()
					break
				}
			}
			c.t.Fatalf("redistest: no replica took over %q's slot from %s after 30s (%v); CLUSTER NODES:\n%s", key, old.Addr, err, nodes)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
