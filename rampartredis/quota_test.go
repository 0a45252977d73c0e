package rampartredis_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/rampartredis"
	"github.com/rampart-go/rampart/rampartredis/internal/redistest"
	"github.com/rampart-go/rampart/ratelimit"
)

// These tests run against a real redis-server over loopback, on real
// time: synctest's virtual clock cannot drive another process or a
// socket. They wait for outcomes (waitFor), never for a duration; the one
// time.Sleep paces a busy replica's loop.

// quotas starts n replicas of one quota, each with its own client.
func quotas(t *testing.T, opts *redis.Options, n int, cfg rampartredis.QuotaConfig) []*rampartredis.Quota {
	t.Helper()
	qs := make([]*rampartredis.Quota, n)
	for i := range qs {
		c := redis.NewClient(opts)
		q, err := rampartredis.NewQuota(c, cfg)
		require.NoError(t, err)
		qs[i] = q
		t.Cleanup(func() {
			require.NoError(t, q.Close())
			c.Close()
		})
	}
	return qs
}

// shareIs reports whether q's share is want, to the hundredth of a call
// per second: shares are rounded to thousandths, and replicas that divide
// the quota at different moments settle a thousandth or two apart.
func shareIs(q *rampartredis.Quota, want rate.Limit) func() bool {
	return func() bool { return math.Abs(float64(q.Stats().Share-want)) < 0.01 }
}

func TestQuota_FL12_MaxMinFairShares(t *testing.T) {
	srv := server(t)
	qs := quotas(t, srv.Options(), 4, rampartredis.QuotaConfig{Key: "api", Limit: 100, Slice: 20 * time.Millisecond})
	// Idle replicas each report a demand of one call a second and split
	// the rest equally: 1 + 96/4.
	for _, q := range qs {
		waitFor(t, "equal shares", shareIs(q, 25))
	}
	// One replica uses everything it gets: the others keep what they use
	// (one call a second each), it gets the rest.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				qs[0].Limiter().Allow()
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	waitFor(t, "the busy replica's share", shareIs(qs[0], 97))
	for _, q := range qs[1:] {
		waitFor(t, "the idle replicas' shares", shareIs(q, 1))
	}
	close(stop)
	<-done
}

func TestQuota_FL13_UnreachableRedis(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  rampartredis.Unreachable
		share rate.Limit
	}{
		{name: "LocalShare", mode: rampartredis.LocalShare, share: 50},
		{name: "Refuse", mode: rampartredis.Refuse, share: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := server(t)
			qs := quotas(t, srv.Options(), 2, rampartredis.QuotaConfig{Key: "api", Limit: 100, Slice: 20 * time.Millisecond, Unreachable: tc.mode})
			for _, q := range qs {
				waitFor(t, "equal shares", shareIs(q, 50))
			}
			srv.Kill()
			for _, q := range qs {
				waitFor(t, "the unreachable share", shareIs(q, tc.share))
			}
			if tc.mode == rampartredis.Refuse {
				l, err := ratelimit.NewLayer[int, int](ratelimit.Config{Limiter: qs[0].Limiter(), Mode: ratelimit.Refuse})
				require.NoError(t, err)
				svc := l.Wrap(rampart.ServiceFunc[int, int](func(_ context.Context, n int) (int, error) { return n, nil }))
				_, err = svc.Call(context.Background(), 1)
				assert.ErrorIs(t, err, ratelimit.ErrLimited)
			}
			srv.Restart()
			for _, q := range qs {
				waitFor(t, "equal shares again", shareIs(q, 50))
			}
		})
	}
}

func TestQuota_FL13_StartsWithoutRedis(t *testing.T) {
	srv := server(t)
	srv.Kill()
	q := quotas(t, srv.Options(), 1, rampartredis.QuotaConfig{Key: "api", Limit: 100, Replicas: 4})[0]
	assert.Equal(t, rate.Limit(25), q.Stats().Share, "Limit / Replicas before Redis answers")
	assert.Equal(t, 3, q.Limiter().Burst(), "a Slice of the share, rounded up")
	assert.False(t, q.Limiter().Allow(), "the bucket starts empty")
}

func TestQuota_FL14_BadInput(t *testing.T) {
	good := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer good.Close()
	for _, tc := range []struct {
		name string
		cfg  rampartredis.QuotaConfig
		want string
	}{
		{name: "key", cfg: rampartredis.QuotaConfig{Limit: 1}, want: "rampartredis: QuotaConfig.Key must not be empty"},
		{name: "limit", cfg: rampartredis.QuotaConfig{Key: "k"}, want: "rampartredis: QuotaConfig.Limit must be positive and finite, got 0"},
		{name: "infinite", cfg: rampartredis.QuotaConfig{Key: "k", Limit: rate.Inf}, want: "rampartredis: QuotaConfig.Limit must be positive and finite, got rate.Inf"},
		{name: "slice", cfg: rampartredis.QuotaConfig{Key: "k", Limit: 1, Slice: -1}, want: "rampartredis: QuotaConfig.Slice must be >= 0 (0 means 100ms), got -1ns"},
		{name: "timeout", cfg: rampartredis.QuotaConfig{Key: "k", Limit: 1, Timeout: -1}, want: "rampartredis: QuotaConfig.Timeout must be >= 0 (0 means 50ms), got -1ns"},
		{name: "backoff", cfg: rampartredis.QuotaConfig{Key: "k", Limit: 1, MaxBackoff: -1}, want: "rampartredis: QuotaConfig.MaxBackoff must be >= 0 (0 means 1s), got -1ns"},
		{name: "unreachable", cfg: rampartredis.QuotaConfig{Key: "k", Limit: 1, Unreachable: 2}, want: "rampartredis: QuotaConfig.Unreachable must be LocalShare or Refuse, got 2"},
		{name: "replicas", cfg: rampartredis.QuotaConfig{Key: "k", Limit: 1, Replicas: -1}, want: "rampartredis: QuotaConfig.Replicas must be >= 0 (0 means 1), got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := rampartredis.NewQuota(good, tc.cfg)
			require.EqualError(t, err, tc.want)
			assert.Nil(t, q)
		})
	}
	_, err := rampartredis.NewQuota(nil, rampartredis.QuotaConfig{Key: "k", Limit: 1})
	require.EqualError(t, err, "rampartredis: client must not be nil")
	_, err = rampartredis.NewQuota((*redis.ClusterClient)(nil), rampartredis.QuotaConfig{Key: "k", Limit: 1})
	require.EqualError(t, err, "rampartredis: client must not be nil", "a typed nil too")
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	_, err = rampartredis.NewQuota(ring, rampartredis.QuotaConfig{Key: "k", Limit: 1})
	require.EqualError(t, err, "rampartredis: the client's RingOptions.ContextTimeoutEnabled must be true, so that the configured Timeout bounds every command")

	for _, q := range []*rampartredis.Quota{nil, {}} {
		require.EqualError(t, q.Close(), "rampartredis: the Quota was not returned by NewQuota")
		require.EqualError(t, q.SetLimit(1), "rampartredis: the Quota was not returned by NewQuota")
		assert.Zero(t, q.Stats())
		assert.Nil(t, q.Limiter())
	}
}

func TestQuota_FL14_SetLimitBadInput(t *testing.T) {
	srv := server(t)
	q := quotas(t, srv.Options(), 1, rampartredis.QuotaConfig{Key: "api", Limit: 10})[0]
	for l, got := range map[rate.Limit]string{0: "0", -1: "-1", rate.Inf: "rate.Inf", rate.Limit(math.NaN()): "NaN"} {
		require.EqualError(t, q.SetLimit(l), "rampartredis: Quota.SetLimit: the limit must be positive and finite, got "+got)
	}
	assert.Equal(t, rate.Limit(10), q.Stats().Share, "unchanged")
	require.NoError(t, q.Close())
	require.ErrorIs(t, q.SetLimit(5), rampartredis.ErrQuotaClosed)
	require.NoError(t, q.Close(), "again: nothing")
}

// admit takes every token q's limiter has at the fake clock's time, and
// returns how many it took.
func admit(q *rampartredis.Quota, c clock.Clock) int {
	n := 0
	for q.Limiter().AllowN(clock.MonotonicTime(c), 1) {
		n++
	}
	return n
}

// drive moves c on by d in steps of 10ms, each replica of qs taking every
// token it has after each step (a replica that wants more than its share),
// and returns how many each admitted.
func drive(c *clock.Fake, qs []*rampartredis.Quota, d time.Duration) []int {
	got := make([]int, len(qs))
	for range d / (10 * time.Millisecond) {
		c.Advance(10 * time.Millisecond)
		for i, q := range qs {
			got[i] += admit(q, c)
		}
	}
	return got
}

func TestQuota_FL12_ExactOnAFakeClock(t *testing.T) {
	// On a clock.Fake the slices run when the test moves the clock, each
	// lease a real round trip to Redis made before Advance returns, so the
	// counts are exact. A Slice of 1s keeps every replica in the division
	// (three Slices of Redis's real clock) however slowly a loaded machine
	// runs the test; patient options let Redis take seconds to answer.
	srv := server(t)
	opts, _ := patient(srv.Options(), rampartredis.Config{})
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 5*time.Hour)
	cfg := rampartredis.QuotaConfig{Key: "api", Limit: 8, Slice: time.Second, Timeout: 5 * time.Second, Clock: fake}
	qs := quotas(t, opts, 8, cfg)
	for _, q := range qs {
		assert.Zero(t, admit(q, fake), "a replica starts with half a token")
	}
	drive(fake, qs, 2*time.Second) // the first slices: the shares settle
	for _, q := range qs {
		require.Equal(t, rate.Limit(1), q.Stats().Share, "8 calls a second among 8 replicas")
	}
	// One call a second each, for 10 seconds: a token bucket admits 10
	// whatever fraction of a token it held when the window began.
	assert.Equal(t, []int{10, 10, 10, 10, 10, 10, 10, 10}, drive(fake, qs, 10*time.Second))

	// 10 calls a second: 1.25 each, 12 or 13 calls in 10 seconds
	// depending on the fraction held at the start; the fleet 100 ± 4.
	for _, q := range qs {
		require.NoError(t, q.SetLimit(10))
	}
	for _, q := range qs {
		require.Equal(t, rate.Limit(1.25), q.Stats().Share, "the new share at once")
	}
	got := drive(fake, qs, 10*time.Second)
	total := 0
	for _, n := range got {
		assert.Contains(t, []int{12, 13}, n)
		total += n
	}
	assert.InDelta(t, 100, total, 4, "within 5%%: %v", got)

	// Raised to 20 a second: 2.5 each, 5 in 2 seconds, 40 fleet-wide.
	for _, q := range qs {
		require.NoError(t, q.SetLimit(20))
	}
	assert.Equal(t, []int{5, 5, 5, 5, 5, 5, 5, 5}, drive(fake, qs, 2*time.Second))
	for _, q := range qs {
		st := q.Stats()
		assert.Zero(t, st.Failures)
		assert.Equal(t, rate.Limit(2.5), st.Share)
	}
	assert.Equal(t, 0, fake.Pending()-len(qs), "one slice timer per replica")
}

// poll makes each of qs take its limiter's tokens as they come due, on
// real time (a replica that wants more than its share), until the test
// ends; it returns a function that reads the fleet's count so far.
func poll(t *testing.T, qs []*rampartredis.Quota) func() int64 {
	var admitted atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, q := range qs {
		lim := q.Limiter()
		wg.Go(func() {
			for ctx.Err() == nil {
				if lim.Allow() {
					admitted.Add(1)
				}
				time.Sleep(time.Millisecond) // pacing, not a wait
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return admitted.Load
}

// window counts what the fleet admits over about d of real time and
// returns it with the fleet's exact due count for the time it measured.
func window(admitted func() int64, limit float64, d time.Duration) (got int64, want float64) {
	n0, t0 := sample(admitted)
	time.Sleep(d)
	n1, t1 := sample(admitted)
	return n1 - n0, limit * t1.Sub(t0).Seconds()
}

// sample reads the count and the time it was read at: between two clock
// readings at most a millisecond apart (a loaded machine may stop the
// test between any two statements), so that the due count is for the
// time the count covers.
func sample(admitted func() int64) (int64, time.Time) {
	for {
		before := time.Now()
		n := admitted()
		if after := time.Now(); after.Sub(before) <= time.Millisecond {
			return n, before
		}
	}
}

func TestQuota_FL12_AStallIsNotADeparture(t *testing.T) {
	// Redis stopped for longer than the liveness (three Slices): every
	// replica's lease is late and each goes on admitting at its share.
	// When Redis resumes, the leases queued meanwhile must not find the
	// others gone: counted from the stall, the first would take all 8
	// calls a second, the next 4, and so on, while the others still held
	// theirs. The shares are sampled throughout; a replica that Redis
	// drops for being late on its own (a loaded machine) takes 8/7, well
	// below the bound.
	srv := server(t)
	opts, _ := patient(srv.Options(), rampartredis.Config{})
	qs := quotas(t, opts, 8, rampartredis.QuotaConfig{Key: "api", Limit: 8, Timeout: 5 * time.Second})
	poll(t, qs)
	for _, q := range qs {
		waitFor(t, "equal shares", shareIs(q, 1))
	}
	var most atomic.Value
	most.Store(rate.Limit(0))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			for _, q := range qs {
				if s := q.Stats().Share; s > most.Load().(rate.Limit) {
					most.Store(s)
				}
			}
			time.Sleep(time.Millisecond)
		}
	})
	commands := func() (n int64) {
		for _, q := range qs {
			n += q.Stats().Commands
		}
		return n
	}
	for range 3 {
		srv.Pause()
		time.Sleep(500 * time.Millisecond)
		srv.Resume()
		// Every replica leases twice after the resume: its queued lease
		// and the next.
		n := commands()
		waitFor(t, "two leases each", func() bool { return commands() >= n+2*int64(len(qs)) })
	}
	cancel()
	wg.Wait()
	assert.Less(t, float64(most.Load().(rate.Limit)), 2.0, "the largest share any replica held")
	for _, q := range qs {
		waitFor(t, "equal shares again", shareIs(q, 1))
	}
}

func TestQuota_FL12_PrecisionAtSmallShares(t *testing.T) {
	// Real time and a real redis-server, the default Slice (100ms): each
	// replica's token bucket admits its share exactly but for the token it
	// was accruing when the window began and the one at its end, so each
	// replica's count is off by less than one call: r·T rounded by the
	// fraction of a token it held when the window began. The replicas
	// start together with equal shares, so their fractions are alike and
	// their errors go the same way: 8 at 1/s admit 80 (r·T is whole),
	// 8 at 1.25/s 96 or 104 (12 or 13 each), 8 at 2.5/s 200. The
	// tolerance is the target, ±5% of the due count for the time
	// actually measured (a loaded machine oversleeps). A window of 2 s
	// (±2 of 40) would be within one call per replica, so the raised
	// limit is measured over 10 s too; the exact 2 s count is checked on
	// the fake clock.
	// Patient options: past the Timeout a replica would take the
	// LocalShare, which is the same share here but not what this tests.
	for _, tc := range []struct {
		name          string
		limit, raised float64
	}{
		{name: "10 among 8, then 20", limit: 10, raised: 20},
		{name: "one a second each", limit: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := server(t)
			opts, _ := patient(srv.Options(), rampartredis.Config{})
			qs := quotas(t, opts, 8, rampartredis.QuotaConfig{Key: "api", Limit: rate.Limit(tc.limit), Timeout: time.Second})
			admitted := poll(t, qs)
			for _, q := range qs {
				waitFor(t, "equal shares", shareIs(q, rate.Limit(tc.limit/8)))
			}
			got, want := window(admitted, tc.limit, 10*time.Second)
			t.Logf("%g/s over 10s: admitted %d of %.1f due", tc.limit, got, want)
			assert.InEpsilon(t, want, float64(got), 0.05)
			if tc.raised == 0 {
				return
			}
			for _, q := range qs {
				require.NoError(t, q.SetLimit(rate.Limit(tc.raised)))
			}
			got, want = window(admitted, tc.raised, 10*time.Second)
			t.Logf("raised to %g/s, over 10s: admitted %d of %.1f due", tc.raised, got, want)
			assert.InEpsilon(t, want, float64(got), 0.05)
			for _, q := range qs {
				assert.Zero(t, q.Stats().Failures)
			}
		})
	}
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

func TestSentinel_FL20_QuotaLeases(t *testing.T) {
	st := redistest.StartSentinels(t)
	c := redis.NewFailoverClient(st.Options())
	defer c.Close()
	q, err := rampartredis.NewQuota(c, rampartredis.QuotaConfig{Key: "partner", Limit: 100, Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer q.Close()
	assert.Zero(t, q.Stats().Failures, "the first lease was answered by the master")
	assert.Equal(t, rate.Limit(100), q.Stats().Share)
}

// TestNewQuota_NZ1_NilPointerClockIsAnError: a Clock that is a nil pointer inside the interface is refused
// at construction, not dereferenced at the first reading mid-traffic.
func TestNewQuota_NZ1_NilPointerClockIsAnError(t *testing.T) {
	_, err := rampartredis.NewQuota(nil, rampartredis.QuotaConfig{Clock: (*clock.Fake)(nil)})
	assert.EqualError(t, err, "rampartredis: QuotaConfig.Clock must not be a nil func or pointer, got *clock.Fake(nil)")
}
