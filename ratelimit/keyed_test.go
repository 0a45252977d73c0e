package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ratelimit"
)

func newKeyed(t *testing.T, cfg ratelimit.KeyedConfig) *ratelimit.Keyed {
	t.Helper()
	k, err := ratelimit.NewKeyed(cfg)
	require.NoError(t, err)
	return k
}

func buildKeyed(t *testing.T, k *ratelimit.Keyed, calls *atomic.Int64) rampart.Service[string, string] {
	t.Helper()
	layer, err := ratelimit.NewKeyedLayer[string, string](k, func(req string) string { return req }, ratelimit.Refuse)
	require.NoError(t, err)
	return layer.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		calls.Add(1)
		return req, nil
	}))
}

func TestNewKeyed_RejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ratelimit.KeyedConfig
		want string
	}{
		{name: "zero limit", cfg: ratelimit.KeyedConfig{}, want: "ratelimit: Limit must be > 0 and < rate.Inf, got 0"},
		{name: "negative limit", cfg: ratelimit.KeyedConfig{Limit: -1}, want: "ratelimit: Limit must be > 0 and < rate.Inf, got -1"},
		{name: "infinite limit", cfg: ratelimit.KeyedConfig{Limit: rate.Inf}, want: fmt.Sprintf("ratelimit: Limit must be > 0 and < rate.Inf, got %v", rate.Inf)},
		{name: "negative burst", cfg: ratelimit.KeyedConfig{Limit: 1, Burst: -1}, want: "ratelimit: Burst must be >= 0 (0 means 1), got -1"},
		{name: "negative max keys", cfg: ratelimit.KeyedConfig{Limit: 1, MaxKeys: -2}, want: "ratelimit: MaxKeys must be >= 0 (0 means DefaultMaxKeys, 10000), got -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ratelimit.NewKeyed(tc.cfg)
			assert.Nil(t, k)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestNewKeyedLayer_RejectsBadArguments(t *testing.T) {
	k := newKeyed(t, ratelimit.KeyedConfig{Limit: 1})
	key := func(s string) string { return s }
	_, err := ratelimit.NewKeyedLayer[string, string](nil, key, ratelimit.Wait)
	assert.EqualError(t, err, "ratelimit: keyed limiter must not be nil")
	_, err = ratelimit.NewKeyedLayer[string, string](k, nil, ratelimit.Wait)
	assert.EqualError(t, err, "ratelimit: key must not be nil")
	_, err = ratelimit.NewKeyedLayer[string, string](k, key, ratelimit.Mode(2))
	assert.EqualError(t, err, "ratelimit: mode must be Wait or Refuse, got Mode(2)")
}

func TestKeyed_Defaults(t *testing.T) {
	k := newKeyed(t, ratelimit.KeyedConfig{Limit: 3})
	lim := k.Limiter("a")
	assert.Equal(t, rate.Limit(3), lim.Limit())
	assert.Equal(t, 1, lim.Burst(), "zero Burst means 1")
	assert.Same(t, lim, k.Limiter("a"))
}

func TestKeyedLayer_KeysHaveSeparateBuckets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newKeyed(t, ratelimit.KeyedConfig{Limit: 10, Burst: 1})
		var calls atomic.Int64
		svc := buildKeyed(t, k, &calls)

		for _, key := range []string{"alice", "bob"} {
			_, err := svc.Call(t.Context(), key)
			require.NoError(t, err, key)
		}
		_, err := svc.Call(t.Context(), "alice")
		requireLimited(t, err, 100*time.Millisecond, false)
		assert.Equal(t, int64(2), calls.Load())
		assert.Equal(t, 2, k.Len())
	})
}

func TestKeyed_DropsKeyWhenBucketIsFullAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newKeyed(t, ratelimit.KeyedConfig{Limit: 10, Burst: 2})
		var calls atomic.Int64
		svc := buildKeyed(t, k, &calls)

		for range 2 {
			_, err := svc.Call(t.Context(), "a")
			require.NoError(t, err)
		}
		// Two tokens at 10/s take 200ms to come back.
		time.Sleep(199 * time.Millisecond)
		assert.Equal(t, 1, k.Len())
		time.Sleep(time.Millisecond)
		assert.Equal(t, 0, k.Len())

		// A new limiter allows exactly what the old one would have: 2, then no more.
		for range 2 {
			_, err := svc.Call(t.Context(), "a")
			require.NoError(t, err)
		}
		_, err := svc.Call(t.Context(), "a")
		requireLimited(t, err, 100*time.Millisecond, false)
	})
}

func TestKeyed_LookupDropsFullLeastRecentlyUsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newKeyed(t, ratelimit.KeyedConfig{Limit: 10, Burst: 1})
		a := k.Limiter("a")
		require.True(t, a.Allow()) // "a" is full again at 100ms
		time.Sleep(50 * time.Millisecond)
		b := k.Limiter("b")
		require.True(t, b.Allow()) // "b" is full again at 150ms

		time.Sleep(50 * time.Millisecond)
		require.True(t, k.Limiter("c").Allow()) // the lookup drops "a", not "b"
		assert.Same(t, b, k.Limiter("b"), "b's bucket is not full yet")
		assert.NotSame(t, a, k.Limiter("a"), "a full bucket was dropped and made anew")
	})
}

func TestKeyed_MaxKeysDropsLeastRecentlyUsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newKeyed(t, ratelimit.KeyedConfig{Limit: 10, Burst: 1, MaxKeys: 2})
		var calls atomic.Int64
		svc := buildKeyed(t, k, &calls)
		for _, key := range []string{"a", "b"} {
			_, err := svc.Call(t.Context(), key)
			require.NoError(t, err)
		}
		// "a" is used again (refused), so "b" is the least recently used.
		_, err := svc.Call(t.Context(), "a")
		require.ErrorIs(t, err, ratelimit.ErrLimited)

		_, err = svc.Call(t.Context(), "c")
		require.NoError(t, err)
		assert.Equal(t, 2, k.Len())

		// "b" was dropped before its bucket refilled, so it gets a full one:
		// the documented cost of the memory bound. "a" is still limited.
		_, err = svc.Call(t.Context(), "b")
		assert.NoError(t, err)
		_, err = svc.Call(t.Context(), "c")
		assert.ErrorIs(t, err, ratelimit.ErrLimited)
	})
}

func TestKeyed_Hammer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const keys, burst, workers, perWorker = 8, 3, 16, 100
		k := newKeyed(t, ratelimit.KeyedConfig{Limit: 1, Burst: burst})
		var calls, refused atomic.Int64
		svc := buildKeyed(t, k, &calls)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					_, err := svc.Call(t.Context(), fmt.Sprint((w+i)%keys))
					if errors.Is(err, ratelimit.ErrLimited) {
						refused.Add(1)
					} else {
						assert.NoError(t, err)
					}
				}
			})
		}
		wg.Wait()
		// No virtual time passed: every key got exactly its burst.
		assert.Equal(t, int64(keys*burst), calls.Load())
		assert.Equal(t, int64(workers*perWorker-keys*burst), refused.Load())
		assert.Equal(t, keys, k.Len())
	})
}

func TestKeyed_HammerMaxKeys(t *testing.T) {
	const maxKeys, workers, perWorker = 4, 16, 200
	k := newKeyed(t, ratelimit.KeyedConfig{Limit: 0.001, Burst: 1, MaxKeys: maxKeys})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				k.Limiter(fmt.Sprint(w*perWorker + i)).Allow()
				if n := k.Len(); n > maxKeys {
					t.Errorf("Len() = %d, want <= %d", n, maxKeys)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, maxKeys, k.Len())
}

func TestKeyedLayer_KnownKeyAllocatesNothing(t *testing.T) {
	k := newKeyed(t, ratelimit.KeyedConfig{Limit: 1e9, Burst: 1 << 30})
	var calls atomic.Int64
	svc := buildKeyed(t, k, &calls)
	ctx := context.Background()
	_, err := svc.Call(ctx, "a")
	require.NoError(t, err)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, "a") }))
}

// WrapKeyed is NewKeyedLayer's Wrap twin: each key has its own bucket.
func TestWrapKeyed(t *testing.T) {
	k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 1, Burst: 1})
	require.NoError(t, err)
	svc, err := wrap.Service3(rampart.ServiceFunc[string, string](func(_ context.Context, user string) (string, error) {
		return "ok " + user, nil
	}), ratelimit.NewKeyedLayer, k, func(user string) string { return user }, ratelimit.Refuse)
	require.NoError(t, err)
	for _, tc := range []struct {
		user    string
		limited bool
	}{{user: "alice"}, {user: "bob"}, {user: "alice", limited: true}} {
		_, err := svc.Call(t.Context(), tc.user)
		assert.Equal(t, tc.limited, errors.Is(err, ratelimit.ErrLimited), tc.user)
	}
}

// In Refuse mode with a Clock the refusal's RetryAfter is exact on it, and
// a keyed limiter runs on it too.
func TestKeyed_CK5_RejectOnTheSuppliedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFake()
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 2, Clock: clk})
		require.NoError(t, err)
		l, err := ratelimit.NewKeyedLayer[string, string](k, func(s string) string { return s }, ratelimit.Refuse)
		require.NoError(t, err)
		svc := l.Wrap(okService)
		_, err = svc.Call(context.Background(), "a")
		require.NoError(t, err)
		clk.Jump(time.Hour) // the wall clock moves; no token comes of it
		_, err = svc.Call(context.Background(), "a")
		var le *ratelimit.LimitedError
		require.True(t, errors.As(err, &le))
		assert.Equal(t, 500*time.Millisecond, le.Wait)
		clk.Advance(500 * time.Millisecond)
		_, err = svc.Call(context.Background(), "a")
		require.NoError(t, err)
		assert.Zero(t, clk.Stats().Now)
	})
}

// A Refuse call through a Keyed shared with Wait calls counts the calls
// waiting for the key, reserved or not: it is refused with the time at
// which a call joining the line would get its token.
func TestKeyedLayer_LM3_RejectCountsTheWaitingLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		inner, admitted := admissions(start)
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 10, Burst: 1})
		require.NoError(t, err)
		key := func(string) string { return "one key" }
		waitLayer, err := ratelimit.NewKeyedLayer[string, string](k, key, ratelimit.Wait)
		require.NoError(t, err)
		rejectLayer, err := ratelimit.NewKeyedLayer[string, string](k, key, ratelimit.Refuse)
		require.NoError(t, err)
		waiting, rejecting := waitLayer.Wrap(inner), rejectLayer.Wrap(inner)

		_, err = waiting.Call(t.Context(), "A")
		require.NoError(t, err)
		var wg sync.WaitGroup
		for _, req := range []string{"B", "C", "D"} {
			wg.Go(func() {
				_, err := waiting.Call(t.Context(), req)
				assert.NoError(t, err)
			})
			synctest.Wait()
		}
		// B, C and D are due at 100, 200 and 300ms; the next token at 400ms.
		_, err = rejecting.Call(t.Context(), "R")
		requireLimited(t, err, 400*time.Millisecond, false)
		time.Sleep(150 * time.Millisecond)
		_, err = rejecting.Call(t.Context(), "R")
		requireLimited(t, err, 250*time.Millisecond, false)
		wg.Wait()
		assert.Equal(t, map[string]time.Duration{"A": 0, "B": 100 * time.Millisecond, "C": 200 * time.Millisecond, "D": 300 * time.Millisecond}, admitted())
	})
}

// The zero Keyed holds no keys and grants no tokens.
func TestKeyed_ZeroValue(t *testing.T) {
	var k ratelimit.Keyed
	assert.Zero(t, k.Len())
	lim := k.Limiter("a")
	assert.False(t, lim.Allow())
	assert.Zero(t, k.Len())
}

func TestRateLimit_EV6_KeyedRejectRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 10, Name: "per-user", Observer: &rec})
		require.NoError(t, err)
		svc, err := wrap.Service3(echoReq, ratelimit.NewKeyedLayer, k, func(req string) string { return req }, ratelimit.Refuse)
		require.NoError(t, err)

		_, err = svc.Call(t.Context(), "alice")
		require.NoError(t, err)
		_, err = svc.Call(t.Context(), "bob")
		require.NoError(t, err)
		_, errAlice := svc.Call(t.Context(), "alice")
		require.ErrorIs(t, errAlice, ratelimit.ErrLimited)

		require.Equal(t, []observe.Event{
			{Source: observe.RateLimit, Name: "per-user", Kind: observe.Refused, Err: errAlice},
		}, rec.Events())
	})
}

// TestKeyed_NZ1_NilKeyed calls every exported method of a nil *Keyed: it
// is the zero Keyed, holding no keys and granting no tokens.
func TestKeyed_NZ1_NilKeyed(t *testing.T) {
	var k *ratelimit.Keyed
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Limiter", Call: func() any { lim := k.Limiter("a"); return []any{lim.Allow(), lim.Limit(), lim.Burst()} }, Want: []any{false, rate.Limit(0), 0}},
		{Name: "Len", Call: func() any { return k.Len() }, Want: 0},
	})
}

// TestNewKeyed_NZ1_NilPointerClockIsAnError: a Clock that is a nil pointer inside the interface is refused
// at construction, not dereferenced at the first reading mid-traffic.
func TestNewKeyed_NZ1_NilPointerClockIsAnError(t *testing.T) {
	_, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 1, Clock: (*clock.Fake)(nil)})
	assert.EqualError(t, err, "ratelimit: Clock must not be a nil func or pointer, got *clock.Fake(nil)")
}
