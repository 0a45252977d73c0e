package rampartredis_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
)

// These tests run against a real redis-server over loopback, on real
// time: synctest's virtual clock cannot drive another process or a
// socket. They wait for outcomes (waitFor, readAfterNow), never for a
// duration, and no assertion can fail because the machine is slow; a
// time.Sleep here only paces a loop that polls.

func breakerConfig() circuitbreaker.Config {
	return circuitbreaker.Config{
		Name:     "payments",
		Policy:   circuitbreaker.Consecutive{Failures: 3},
		CoolDown: 5 * time.Second,
	}
}

func TestShare_FL1_TripOpensEveryReplica(t *testing.T) {
	srv := server(t)
	rs := fleet(t, srv.Options(), 3, breakerConfig(), rampartredis.Config{ID: "r"})
	start := time.Now()
	rs[0].trip(t)
	for i, r := range rs[1:] {
		waitFor(t, "replica to open", stateIs(r.br, circuitbreaker.Open))
		snap := r.br.State()
		elapsed := time.Since(start) // since before the trip: at least since it
		assert.True(t, snap.Remote, "replica %d", i+1)
		assert.ErrorIs(t, snap.Cause, rampartredis.ErrFleetOpen)
		var fe *rampartredis.FleetOpenError
		require.ErrorAs(t, snap.Cause, &fe)
		assert.Equal(t, rampartredis.FleetOpenError{Cause: "backend down", By: "r"}, *fe)
		// The record keeps the trip's end to the millisecond, and the
		// replica stays open for Timeout past it.
		assert.GreaterOrEqual(t, snap.RetryAfter+elapsed, 5*time.Second+rampartredis.DefaultTimeout-time.Millisecond,
			"the trip's cool-down plus Timeout, counted from the trip")
		assert.LessOrEqual(t, snap.RetryAfter, 5*time.Second+rampartredis.DefaultTimeout)
		_, err := r.br.TryAcquire()
		require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	}
	assert.Equal(t, int64(1), rs[0].sh.Stats().Published)
}

func TestShare_FL1_RaceLoserAdoptsTheWinnersRecord(t *testing.T) {
	srv := server(t)
	rs := fleet(t, srv.Options(), 4, breakerConfig(), rampartredis.Config{})
	for _, r := range rs {
		waitFor(t, "startup reads", func() bool { return r.sh.Stats().Commands >= 1 })
	}
	// Every replica fails at once: some trip before the first trip reaches
	// them; exactly one write wins, the others adopt it.
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() {
			for r.br.State().State == circuitbreaker.Closed {
				if p, err := r.br.TryAcquire(); err == nil {
					p.Failure(errBackend)
				}
			}
		})
	}
	wg.Wait()
	var published int64
	for _, r := range rs {
		waitFor(t, "every replica on the shared record", func() bool { return r.br.State().Remote })
		published += r.sh.Stats().Published
	}
	assert.Equal(t, int64(1), published)
}

func TestShare_FL1_ResetAndSwitchStayLocal(t *testing.T) {
	srv := server(t)
	sw := &circuitbreaker.Switch{}
	cfg := breakerConfig()
	cfg.Switch = sw
	rs := fleet(t, srv.Options(), 2, cfg, rampartredis.Config{Refresh: 50 * time.Millisecond})
	rs[0].trip(t)
	waitFor(t, "the other replica to open", stateIs(rs[1].br, circuitbreaker.Open))
	sw.ForceOpen(nil)
	sw.Release() // both Closed, locally
	rs[1].br.Reset()
	for _, r := range rs {
		waitFor(t, "the shared Open applied again", stateIs(r.br, circuitbreaker.Open))
		assert.True(t, r.br.State().Remote)
	}
	assert.Equal(t, int64(1), rs[0].sh.Stats().Published+rs[1].sh.Stats().Published, "only the trip was published")
}

func TestShare_FL2_OneProbeRoundFleetWide(t *testing.T) {
	for _, maxProbes := range []int{1, 2} {
		t.Run("MaxProbes="+string(rune('0'+maxProbes)), func(t *testing.T) {
			srv := server(t)
			cfg := breakerConfig()
			cfg.CoolDown, cfg.MaxProbes = 300*time.Millisecond, maxProbes
			// Redis may take seconds to answer on a loaded machine: past
			// Timeout a replica fails safe and probes alone, which is not
			// what this test tests.
			opts, scfg := patient(srv.Options(), rampartredis.Config{})
			rs := fleet(t, opts, 4, cfg, scfg)
			rs[0].trip(t)
			for _, r := range rs {
				waitFor(t, "every replica open", stateIs(r.br, circuitbreaker.Open))
			}
			// Every replica asks to call until MaxProbes probes have been
			// admitted somewhere, and goes on until no replica can admit
			// more: none does.
			var admitted atomic.Int32
			var permits sync.Map
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i, r := range rs {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if p, err := r.br.TryAcquire(); err == nil {
							admitted.Add(1)
							permits.Store(i*100+int(admitted.Load()), &p)
						}
						time.Sleep(time.Millisecond) // pacing, not a wait
					}
				})
			}
			waitFor(t, "the probes", func() bool { return admitted.Load() >= int32(maxProbes) })
			// Then until every replica has decided the round: the winner is
			// HalfOpen with its probes in flight, each other one lost its
			// claim, which holds it open for up to ProbeClaim plus Timeout
			// (12s), where before its claim it was open for at most
			// CoolDown plus Timeout (2.3s). From then on no replica can
			// admit a call, so an extra admission, if any, has been counted.
			waitFor(t, "every replica's claim decided", func() bool {
				for _, r := range rs {
					s := r.br.State()
					probing := s.State == circuitbreaker.HalfOpen && s.ProbesInFlight > 0
					lost := s.State == circuitbreaker.Open && s.RetryAfter > scfg.ProbeClaim/2
					if !probing && !lost {
						return false
					}
				}
				return true
			})
			close(stop)
			wg.Wait()
			assert.Equal(t, int32(maxProbes), admitted.Load(), "probes fleet-wide")
			permits.Range(func(_, v any) bool { v.(*circuitbreaker.Permit).Success(); return true })
			for _, r := range rs {
				waitFor(t, "every replica closed", stateIs(r.br, circuitbreaker.Closed))
			}
		})
	}
}

func TestShare_FL2_FailedProbeReopensTheFleet(t *testing.T) {
	srv := server(t)
	cfg := breakerConfig()
	cfg.CoolDown = 200 * time.Millisecond
	rs := fleet(t, srv.Options(), 3, cfg, rampartredis.Config{})
	rs[0].trip(t)
	for _, r := range rs {
		waitFor(t, "every replica open", stateIs(r.br, circuitbreaker.Open))
	}
	var probe *circuitbreaker.Permit
	var prober *replica
	waitFor(t, "a probe", func() bool {
		for _, r := range rs {
			if p, err := r.br.TryAcquire(); err == nil {
				probe, prober = &p, r
				return true
			}
		}
		return false
	})
	gen := prober.sh.Stats().Published
	require.True(t, probe.Failure(errBackend))
	waitFor(t, "the re-open published", func() bool { return prober.sh.Stats().Published == gen+1 })
	for _, r := range rs {
		waitFor(t, "every replica open again", stateIs(r.br, circuitbreaker.Open))
	}
}

// The keys of the breaker named "payments" under the default prefix.
const (
	stateKey       = "rampart:{payments}:state"
	reportsKey     = "rampart:{payments}:reports"
	changesChannel = "rampart:{payments}:changes"
)

// recordState returns the state of the shared record in Redis: "closed"
// when there is none, as the scripts read it.
func recordState(t *testing.T, c *redis.Client) string {
	t.Helper()
	st, err := c.HGet(context.Background(), stateKey, "state").Result()
	if errors.Is(err, redis.Nil) {
		return "closed"
	}
	require.NoError(t, err)
	return st
}

// readAfterNow waits until each of rs has read the record after this
// call: two commands counted from now, the first of which may have been
// sent before, the second is sent after the first's result was applied.
func readAfterNow(t *testing.T, rs ...*replica) {
	t.Helper()
	before := make([]int64, len(rs))
	for i, r := range rs {
		before[i] = r.sh.Stats().Commands
	}
	waitFor(t, "a read after the write", func() bool {
		for i, r := range rs {
			if r.sh.Stats().Commands < before[i]+2 {
				return false
			}
		}
		return true
	})
}

func TestShare_FL3_QuorumHonoursAnOpenOnlyFromKReplicas(t *testing.T) {
	srv := server(t)
	c := srv.Client()
	ctx := context.Background()
	rs := fleet(t, srv.Options(), 3, breakerConfig(), rampartredis.Config{Quorum: 2, Refresh: 20 * time.Millisecond})
	rs[0].trip(t)
	waitFor(t, "the report written", func() bool { return c.ZCard(ctx, reportsKey).Val() == 1 })
	assert.Equal(t, "closed", recordState(t, c), "one replica is not a quorum")
	readAfterNow(t, rs[1], rs[2])
	for _, r := range rs[1:] {
		assert.Equal(t, circuitbreaker.Closed, r.br.State().State, "one replica is not a quorum")
	}
	assert.False(t, rs[0].br.State().Remote, "the reporter's own Open stays its own")
	rs[1].trip(t)
	waitFor(t, "the third replica to open", stateIs(rs[2].br, circuitbreaker.Open))
	assert.True(t, rs[2].br.State().Remote)
	assert.Equal(t, "open", recordState(t, c))
}

func TestShare_FL3_ReportsOutsideTheWindowDoNotCount(t *testing.T) {
	srv := server(t)
	c := srv.Client()
	ctx := context.Background()
	const window = 200 * time.Millisecond
	rs := fleet(t, srv.Options(), 3, breakerConfig(), rampartredis.Config{Quorum: 2, QuorumWindow: window, Refresh: 20 * time.Millisecond})
	rs[0].trip(t)
	var first redis.Z
	waitFor(t, "the first report", func() bool {
		zs := c.ZRangeWithScores(ctx, reportsKey, 0, -1).Val()
		if len(zs) == 1 {
			first = zs[0]
		}
		return len(zs) == 1
	})
	waitFor(t, "the window to pass on Redis's clock", func() bool {
		now := c.Time(ctx).Val()
		return now.UnixMilli() > int64(first.Score)+window.Milliseconds()
	})
	rs[1].trip(t)
	waitFor(t, "the second report", func() bool {
		for _, z := range c.ZRangeWithScores(ctx, reportsKey, 0, -1).Val() {
			if z.Member != first.Member {
				return true
			}
		}
		// A quorum reached deletes the reports: the record is open.
		return recordState(t, c) == "open"
	})
	assert.Equal(t, "closed", recordState(t, c), "the first report is outside the window")
	assert.Equal(t, int64(1), c.ZCard(ctx, reportsKey).Val(), "the first report was dropped")
	readAfterNow(t, rs[2])
	assert.Equal(t, circuitbreaker.Closed, rs[2].br.State().State)
}

func TestShare_FL4_ClosedSuccessSendsNoCommand(t *testing.T) {
	srv := server(t)
	rs := fleet(t, srv.Options(), 1, breakerConfig(), rampartredis.Config{Refresh: time.Hour})
	r := rs[0]
	waitFor(t, "the startup read and the read on subscribing", func() bool { return r.sh.Stats().Commands >= 2 })
	before := r.sh.Stats().Commands
	for range 10000 {
		p, err := r.br.TryAcquire()
		require.NoError(t, err)
		p.Success()
	}
	p, _ := r.br.TryAcquire()
	p.Failure(errBackend) // below the threshold: no transition
	assert.Equal(t, before, r.sh.Stats().Commands, "calls and outcomes send nothing to Redis")
}

func TestShare_FL4_SharingEvidenceCostsASuccessNothing(t *testing.T) {
	srv := server(t)
	cfg := breakerConfig()
	cfg.Policy = circuitbreaker.Consecutive{Failures: 1000}
	rs := fleet(t, srv.Options(), 1, cfg, rampartredis.Config{Refresh: time.Hour, Failures: 100})
	r := rs[0]
	waitFor(t, "the startup read and the read on subscribing", func() bool { return r.sh.Stats().Commands >= 2 })
	before := r.sh.Stats().Commands
	allocs := testing.AllocsPerRun(10000, func() {
		p, _ := r.br.TryAcquire()
		p.Success()
	})
	assert.Equal(t, 0.0, allocs, "a Closed success allocates nothing")
	assert.Equal(t, before, r.sh.Stats().Commands, "and sends nothing to Redis")
	p, _ := r.br.TryAcquire()
	p.Failure(errBackend)
	waitFor(t, "the failure reported, in the background", func() bool { return r.sh.Stats().Reported == 1 })
	assert.Equal(t, before+1, r.sh.Stats().Commands, "one script")
	assert.Equal(t, "1", srv.Client().Get(context.Background(), "rampart:{payments}:failures").Val())
}

func TestShare_FL5_PausedRedisNeverBlocksACall(t *testing.T) {
	srv := server(t)
	// No command to the paused Redis ends before the test does: the
	// client's own timeouts are off and Config.Timeout is an hour. A call
	// that waited for Redis would not return while it is paused.
	opts := srv.Options()
	opts.ReadTimeout, opts.WriteTimeout = -1, -1
	// Failure evidence is shared too: reporting it must not block either.
	rs := fleet(t, opts, 2, breakerConfig(), rampartredis.Config{Timeout: time.Hour, ProbeClaim: 3 * time.Hour, Refresh: 50 * time.Millisecond, Failures: 100})
	waitFor(t, "startup reads", func() bool { return rs[1].sh.Stats().Commands >= 1 })
	srv.Pause()
	paused := true
	defer func() {
		if paused {
			srv.Resume()
		}
	}()
	// Tripping and every call must return while Redis is paused.
	tripAndCall(t, "while Redis is paused", rs[0], rs[1], 1000)
	assert.Equal(t, circuitbreaker.Open, rs[0].br.State().State, "the replica's own breaker works alone")
	assert.Equal(t, circuitbreaker.Closed, rs[1].br.State().State)
	srv.Resume()
	paused = false
	waitFor(t, "the trip published after Redis resumed", stateIs(rs[1].br, circuitbreaker.Open))
}

func TestShare_FL5_RemoteOpenEndsByItselfWhileRedisIsPaused(t *testing.T) {
	srv := server(t)
	cfg := breakerConfig()
	// The other replica is Open only for the record's cool-down, and the
	// trip is published only while the tripping breaker is still Open: a
	// cool-down of seconds, and a Timeout a loaded machine meets, keep
	// that Open from ending before the test sees it.
	cfg.CoolDown = 3 * time.Second
	rs := fleet(t, srv.Options(), 2, cfg, rampartredis.Config{Timeout: 500 * time.Millisecond})
	synced(t, rs...)
	rs[0].trip(t)
	waitFor(t, "the other replica to open", stateIs(rs[1].br, circuitbreaker.Open))
	srv.Pause()
	defer srv.Resume()
	// No claim can be made: the Open ends by itself (its cool-down plus
	// Timeout) and the replica probes on its own.
	waitFor(t, "a local probe", func() bool {
		p, err := rs[1].br.TryAcquire()
		if err != nil {
			return false
		}
		p.Success()
		return true
	})
	assert.Equal(t, circuitbreaker.Closed, rs[1].br.State().State)
}

func TestShare_FL6_KillAndRestartReconciles(t *testing.T) {
	srv := server(t)
	rs := fleet(t, srv.Options(), 2, breakerConfig(), rampartredis.Config{Timeout: 100 * time.Millisecond, Refresh: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	waitFor(t, "startup reads", func() bool { return rs[1].sh.Stats().Commands >= 1 })
	srv.Kill()
	rs[0].trip(t) // not published: Redis is down
	waitFor(t, "a failed command", func() bool { return rs[0].sh.Stats().Failures >= 1 })
	assert.Equal(t, circuitbreaker.Closed, rs[1].br.State().State)
	srv.Restart() // empty: the record is gone
	waitFor(t, "the other replica to open after reconnect", stateIs(rs[1].br, circuitbreaker.Open))
	// The script that writes the record publishes it too, so the other
	// replica may open before the writer has its reply and adopts it.
	waitFor(t, "the tripping replica to adopt the record it wrote", func() bool { return rs[0].br.State().Remote })
}

func TestShare_FL6_AFailedPublishIsRetriedAfterTheBackoff(t *testing.T) {
	srv := server(t)
	// Hourly reads, and a pause, which keeps the pub/sub connections (no
	// resubscription, so no read on resubscribing): the trip that could
	// not be written must be written at the backoff's read, not a Refresh
	// later.
	rs := fleet(t, srv.Options(), 2, breakerConfig(), rampartredis.Config{Timeout: 100 * time.Millisecond, Refresh: time.Hour, MaxBackoff: 200 * time.Millisecond})
	synced(t, rs...)
	c := srv.Client()
	waitFor(t, "both subscribed", func() bool {
		return c.PubSubNumSub(context.Background(), changesChannel).Val()[changesChannel] == 2
	})
	srv.Pause()
	rs[0].trip(t)
	waitFor(t, "the publish failed", func() bool { return rs[0].sh.Stats().Failures >= 1 })
	srv.Resume()
	waitFor(t, "the trip written and received", func() bool { return rs[1].br.State().Remote })
	assert.Equal(t, int64(1), rs[0].sh.Stats().Published)
}

func TestShare_FL7_LostMessagesConvergeByTheRead(t *testing.T) {
	srv := server(t)
	rs := fleet(t, srv.Options(), 2, breakerConfig(), rampartredis.Config{Refresh: 100 * time.Millisecond})
	// Both replicas subscribe in the background: kill their connections
	// once both are subscribed, not merely once they have read Redis.
	c := srv.Client()
	ctx := context.Background()
	waitFor(t, "both subscriptions", func() bool {
		return c.PubSubNumSub(ctx, changesChannel).Val()[changesChannel] == 2
	})
	require.Equal(t, int64(2), srv.KillPubSub())
	rs[0].trip(t)
	waitFor(t, "the other replica to open", stateIs(rs[1].br, circuitbreaker.Open))

	// A change whose message nobody receives (written by hand, published
	// nowhere): only the periodic read can deliver it.
	gen, err := c.HGet(ctx, "rampart:{payments}:state", "gen").Int64()
	require.NoError(t, err)
	require.NoError(t, c.HSet(ctx, "rampart:{payments}:state", "gen", gen+1, "state", "closed", "until", 0).Err())
	waitFor(t, "the periodic read to close the replica", stateIs(rs[1].br, circuitbreaker.Closed))
}

func TestShare_FL7_PubSubResubscribesAfterARestart(t *testing.T) {
	srv := server(t)
	// Hourly reads: after the restart, only a resubscription (and the read
	// it triggers) or a message can bring the record.
	rs := fleet(t, srv.Options(), 2, breakerConfig(), rampartredis.Config{Timeout: 100 * time.Millisecond, Refresh: time.Hour, MaxBackoff: 200 * time.Millisecond})
	synced(t, rs...)
	c := srv.Client()
	ctx := context.Background()
	srv.Kill()
	srv.Restart()
	waitFor(t, "both resubscribed", func() bool {
		return c.PubSubNumSub(ctx, changesChannel).Val()[changesChannel] == 2
	})
	rs[0].trip(t)
	waitFor(t, "the trip by pub/sub", func() bool { return rs[1].br.State().Remote })
}

func TestShare_FL8_StartsWithoutRedis(t *testing.T) {
	srv := server(t)
	srv.Kill()
	opts := srv.Options()
	rs := fleet(t, opts, 2, breakerConfig(), rampartredis.Config{Timeout: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	p, err := rs[0].br.TryAcquire()
	require.NoError(t, err, "the breaker works without Redis")
	p.Success()
	rs[0].trip(t)
	srv.Restart()
	waitFor(t, "the trip shared once Redis is up", stateIs(rs[1].br, circuitbreaker.Open))
}

func TestShare_FL9_CloseStopsEveryGoroutine(t *testing.T) {
	srv := server(t)
	srv.Pause() // Close must not wait for a hung Redis beyond the timeout
	c := redis.NewClient(srv.Options())
	defer c.Close()
	br, err := circuitbreaker.New(breakerConfig())
	require.NoError(t, err)
	sh, err := rampartredis.Share(br, c, rampartredis.Config{Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sh.Close() })
	// The worker, and the client's hub: its pub/sub reader and its refresh
	// loop.
	waitFor(t, "the background goroutines", func() bool { return len(ownGoroutines()) == 3 })
	require.NoError(t, sh.Close())
	require.NoError(t, sh.Close(), "a second Close does nothing")
	// Close waited for them; each may still be returning from its deferred
	// wg.Done.
	waitFor(t, "no goroutine left", func() bool { return len(ownGoroutines()) == 0 })
	srv.Resume()
	// Detached: the breaker's transitions no longer reach Redis.
	r := &replica{br: br}
	r.trip(t)
	assert.Equal(t, int64(0), sh.Stats().Published)
}

func TestShare_FL10_EveryKeyUnderOneHashTag(t *testing.T) {
	srv := server(t)
	rs := fleet(t, srv.Options(), 1, breakerConfig(), rampartredis.Config{Quorum: 2, Prefix: "app:"})
	rs[0].trip(t)
	c := srv.Client()
	waitFor(t, "the report", func() bool { return c.Exists(context.Background(), "app:{payments}:reports").Val() == 1 })
	keys, err := c.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		assert.True(t, strings.HasPrefix(k, "app:{payments}:"), k)
	}
}

func TestShare_FL11_BadInput(t *testing.T) {
	good := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer good.Close()
	noTimeout := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer noTimeout.Close()
	named, err := circuitbreaker.New(breakerConfig())
	require.NoError(t, err)
	unnamed, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		br     *circuitbreaker.Breaker
		client redis.UniversalClient
		cfg    rampartredis.Config
		want   string
	}{
		{name: "nil breaker", client: good, want: "rampartredis: breaker must not be nil"},
		{name: "nil client", br: named, want: "rampartredis: client must not be nil"},
		{name: "context timeouts off", br: named, client: noTimeout, want: "rampartredis: the client's Options.ContextTimeoutEnabled must be true, so that the configured Timeout bounds every command"},
		{name: "no key", br: unnamed, client: good, want: "rampartredis: Config.Key is empty and the breaker has no Name; set one of them"},
		{name: "timeout", br: named, client: good, cfg: rampartredis.Config{Timeout: -1}, want: "rampartredis: Config.Timeout must be >= 0 (0 means 200ms), got -1ns"},
		{name: "refresh", br: named, client: good, cfg: rampartredis.Config{Refresh: -1}, want: "rampartredis: Config.Refresh must be >= 0 (0 means 1s), got -1ns"},
		{name: "probe claim", br: named, client: good, cfg: rampartredis.Config{ProbeClaim: -1}, want: "rampartredis: Config.ProbeClaim must be >= 0 (0 means 5s), got -1ns"},
		{name: "quorum", br: named, client: good, cfg: rampartredis.Config{Quorum: -1}, want: "rampartredis: Config.Quorum must be >= 0 (0 or 1: every trip opens the fleet), got -1"},
		{name: "quorum window", br: named, client: good, cfg: rampartredis.Config{QuorumWindow: -1}, want: "rampartredis: Config.QuorumWindow must be >= 0 (0 means 10s), got -1ns"},
		{name: "ttl", br: named, client: good, cfg: rampartredis.Config{RecordTTL: -1}, want: "rampartredis: Config.RecordTTL must be >= 0 (0 means 24h0m0s), got -1ns"},
		{name: "backoff", br: named, client: good, cfg: rampartredis.Config{MaxBackoff: -1}, want: "rampartredis: Config.MaxBackoff must be >= 0 (0 means 5s), got -1ns"},
		{name: "typed nil client", br: named, client: (*redis.Client)(nil), want: "rampartredis: client must not be nil"},
		{name: "typed nil cluster client", br: named, client: (*redis.ClusterClient)(nil), want: "rampartredis: client must not be nil"},
		{name: "probe claim under 1ms", br: named, client: good, cfg: rampartredis.Config{ProbeClaim: 999 * time.Microsecond}, want: "rampartredis: Config.ProbeClaim must be 0 (5s) or at least 1ms (Redis counts milliseconds), got 999µs"},
		{name: "timeout under 1ms", br: named, client: good, cfg: rampartredis.Config{Timeout: time.Microsecond}, want: "rampartredis: Config.Timeout must be 0 (200ms) or at least 1ms (Redis counts milliseconds), got 1µs"},
		{name: "window under 1ms", br: named, client: good, cfg: rampartredis.Config{QuorumWindow: 1}, want: "rampartredis: Config.QuorumWindow must be 0 (10s) or at least 1ms (Redis counts milliseconds), got 1ns"},
		{name: "claim within two timeouts", br: named, client: good, cfg: rampartredis.Config{Timeout: time.Second, ProbeClaim: 2 * time.Second}, want: "rampartredis: Config.ProbeClaim (2s) must be more than twice Config.Timeout (1s): the claim is renewed halfway through, and a renewal may take Timeout"},
		{name: "default claim with a long timeout", br: named, client: good, cfg: rampartredis.Config{Timeout: 3 * time.Second}, want: "rampartredis: Config.ProbeClaim (5s) must be more than twice Config.Timeout (3s): the claim is renewed halfway through, and a renewal may take Timeout"},
		{name: "failures", br: named, client: good, cfg: rampartredis.Config{Failures: -1}, want: "rampartredis: Config.Failures must be >= 0 (0: share verdicts only), got -1"},
		{name: "failure window", br: named, client: good, cfg: rampartredis.Config{FailureWindow: -1}, want: "rampartredis: Config.FailureWindow must be >= 0 (0 means 10s), got -1ns"},
		{name: "cooldown", br: named, client: good, cfg: rampartredis.Config{CoolDown: time.Microsecond}, want: "rampartredis: Config.CoolDown must be 0 (30s) or at least 1ms (Redis counts milliseconds), got 1µs"},
		{name: "record outlived by the claim", br: named, client: good, cfg: rampartredis.Config{RecordTTL: 5 * time.Second}, want: "rampartredis: Config.RecordTTL (5s) must be more than Config.ProbeClaim (5s): a record that expires during a round closes the fleet without a verdict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh, err := rampartredis.Share(tc.br, tc.client, tc.cfg)
			require.EqualError(t, err, tc.want)
			assert.Nil(t, sh)
		})
	}

	// One breaker, one Shared at a time.
	sh, err := rampartredis.Share(named, good, rampartredis.Config{})
	require.NoError(t, err)
	twice, err := rampartredis.Share(named, good, rampartredis.Config{Key: "other"})
	require.EqualError(t, err, "rampartredis: the breaker is shared already: Close the other Shared first")
	assert.Nil(t, twice)
	require.NoError(t, sh.Close())
	again, err := rampartredis.Share(named, good, rampartredis.Config{})
	require.NoError(t, err, "once closed, it can be shared again")
	require.NoError(t, again.Close())

	// A Shared that Share did not return.
	for _, s := range []*rampartredis.Shared{nil, {}} {
		require.EqualError(t, s.Close(), "rampartredis: the Shared was not returned by Share")
		require.EqualError(t, s.WaitSynced(context.Background()), "rampartredis: the Shared was not returned by Share")
		assert.Equal(t, rampartredis.Stats{}, s.Stats())
	}

	var fe error = &rampartredis.FleetOpenError{By: "r1"}
	assert.True(t, errors.Is(fe, rampartredis.ErrFleetOpen))
	assert.Equal(t, "rampartredis: open across the fleet (reported by r1)", fe.Error())
}

func TestShare_FL18_WaitSyncedAppliesTheRecordBeforeServing(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	// The fleet is open (no end) before this replica starts.
	require.NoError(t, srv.Client().HSet(ctx, stateKey, "gen", 3, "state", "open", "until", -1, "cause", "backend down", "by", "r0").Err())
	r := join(t, srv.Options(), breakerConfig(), rampartredis.Config{})
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, r.sh.WaitSynced(wctx))
	_, err := r.br.TryAcquire()
	require.ErrorIs(t, err, rampartredis.ErrFleetOpen, "the first call after WaitSynced sees the fleet's Open")
	require.NoError(t, r.sh.WaitSynced(ctx), "and later calls return at once")

	// With Redis down, the context bounds the wait; Close ends it.
	srv.Kill()
	down := join(t, srv.Options(), circuitbreaker.Config{Name: "other"}, rampartredis.Config{Timeout: 50 * time.Millisecond})
	short, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	require.ErrorIs(t, down.sh.WaitSynced(short), context.DeadlineExceeded)
	p, err := down.br.TryAcquire()
	require.NoError(t, err, "meanwhile the breaker decides alone")
	p.Success()
	go func() { _ = down.sh.Close() }()
	require.ErrorIs(t, down.sh.WaitSynced(ctx), rampartredis.ErrClosed)
}

// The fault tests again, on a real Redis Cluster of three masters that
// each test starts on loopback: every key of one breaker is in one slot
// (its hash tag), so every script runs on the slot's master, and the
// change messages reach subscribers connected to any node.

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

func TestCluster_FL20_MasterKilledItsReplicaTakesOver(t *testing.T) {
	cl := redistest.StartReplicatedCluster(t)
	master := cl.Master(stateKey)
	killedMidRun(t, func() redis.UniversalClient { return redis.NewClusterClient(cl.Options()) },
		master.Kill,
		func() { cl.WaitTakenOver(stateKey, master) }, // the slot moves to the replica
		func() map[string]string { return clusterRecord(t, cl) })
}

func TestCluster_FL16_AReplicaCutOffAdoptsTheRecordItFinds(t *testing.T) {
	cutOffAdopts(t, onCluster(t))
}

func TestCluster_FL17_AVerdictAfterItsClaimLapsedChangesNothing(t *testing.T) {
	lateVerdict(t, onCluster(t))
}

// Behind Redis Sentinel: go-redis's failover client (a *redis.Client that
// asks the Sentinel for the master) against a master, its replica and a
// Sentinel that each test starts on loopback.

func TestSentinel_FL20_TripOpensEveryReplica(t *testing.T) {
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

// TestFleetOpenError_NZ1_NilFleetOpenError calls every exported method of
// a nil *FleetOpenError, which a caller holds after an errors.As that
// found none.
func TestFleetOpenError_NZ1_NilFleetOpenError(t *testing.T) {
	var e *rampartredis.FleetOpenError
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Error", Call: func() any { return e.Error() }, Want: "<nil>"},
		{Name: "Is", Call: func() any { return e.Is(rampartredis.ErrFleetOpen) }, Want: true},
	})
}
