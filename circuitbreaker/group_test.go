package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
)

func newGroup(t testing.TB, cfg circuitbreaker.GroupConfig) *circuitbreaker.Group[string] {
	t.Helper()
	g, err := circuitbreaker.NewGroup[string](cfg)
	require.NoError(t, err)
	return g
}

// keysOf returns the keys of g.States(), in order.
func keysOf(g *circuitbreaker.Group[string]) []string {
	keys := []string{}
	for _, s := range g.States() {
		keys = append(keys, s.Key)
	}
	return keys
}

func TestGroup_CB18_OneBreakerPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t, circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{
			Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute,
		}})
		a, b := g.Breaker("a"), g.Breaker("b")
		require.NotSame(t, a, b)
		assert.Same(t, a, g.Breaker("a"))
		assert.NotSame(t, g.Overflow(), a)

		fail(t, a, 1, errBoom)
		assert.Equal(t, []circuitbreaker.KeyState[string]{
			{Key: "a", Snapshot: circuitbreaker.Snapshot{Name: "a", State: circuitbreaker.Open, RetryAfter: time.Minute, Cause: errBoom}},
			{Key: "b", Snapshot: circuitbreaker.Snapshot{Name: "b"}},
		}, g.States())
		succeed(t, g.Breaker("b"), 1) // b is not stopped by a
		assert.Equal(t, 2, g.Len())
	})
}

func TestGroup_CB18_CB13_ConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  circuitbreaker.GroupConfig
		want string
	}{
		{name: "MaxKeys", cfg: circuitbreaker.GroupConfig{MaxKeys: -1},
			want: "circuitbreaker: GroupConfig.MaxKeys must be >= 0 (0 means 10000), got -1"},
		{name: "IdleTimeout", cfg: circuitbreaker.GroupConfig{IdleTimeout: -time.Second},
			want: "circuitbreaker: GroupConfig.IdleTimeout must be >= 0 (0 means 10m0s; rampart.Forever never drops), got -1s"},
		{name: "Breaker", cfg: circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{MaxProbes: -1}},
			want: "circuitbreaker: MaxProbes must be in [0, 1024], got -1 (GroupConfig.Breaker)"},
		{name: "Policy", cfg: circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Policy: circuitbreaker.TripFunc(nil)}},
			want: "circuitbreaker: Config.Policy is a nil circuitbreaker.TripFunc (GroupConfig.Breaker)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := circuitbreaker.NewGroup[string](tt.cfg)
			assert.Nil(t, g)
			assert.EqualError(t, err, tt.want)
		})
	}
}

// A key's Closed breaker is dropped at the first look IdleTimeout after the
// last look that saw it used (or after it was added); a look is Len or
// States here.
func TestGroup_CB18_IdleClosedBreakerIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t, circuitbreaker.GroupConfig{IdleTimeout: time.Minute})
		a := g.Breaker("a") // t=0
		g.Breaker("b")
		time.Sleep(30 * time.Second)
		g.Breaker("b") // used at 30s

		time.Sleep(30*time.Second - 1)
		assert.Equal(t, []string{"a", "b"}, keysOf(g), "59.999999999s: nothing idle for a minute yet")
		time.Sleep(time.Nanosecond)
		assert.Equal(t, []string{"b"}, keysOf(g), "60s: a was unused since it was added")
		assert.NotSame(t, a, g.Breaker("a"), "a new breaker for a")

		// The look at 59.999999999s saw b used: b goes a minute after it.
		time.Sleep(time.Minute - 2)
		assert.Equal(t, []string{"b", "a"}, keysOf(g))
		time.Sleep(time.Nanosecond)
		assert.Equal(t, []string{"a"}, keysOf(g))
	})
}

// Adding a key also looks for idle keys, at most every quarter of
// IdleTimeout.
func TestGroup_CB18_AddingAKeyDropsIdleOnes(t *testing.T) {
	// run adds keys at the given times (after a first look at 1m that
	// drops the first breaker of "a") and reports whether the breaker of
	// "a" created at 1m is still held at the end.
	run := func(t *testing.T, adds []time.Duration) (held bool) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			g := newGroup(t, circuitbreaker.GroupConfig{IdleTimeout: time.Minute})
			first := g.Breaker("a")
			time.Sleep(time.Minute)
			g.Breaker("b") // looks: a was idle for a minute
			a := g.Breaker("a")
			require.NotSame(t, first, a)
			for i, at := range adds {
				time.Sleep(at - time.Since(start))
				g.Breaker(strconv.Itoa(i))
			}
			held = a == g.Breaker("a")
		})
		return held
	}
	const quarter = 15 * time.Second
	lastLook := 2*time.Minute - 1 // a is idle for 59.999999999s: kept
	assert.True(t, run(t, []time.Duration{lastLook, lastLook + quarter - 1}), "no look within a quarter minute")
	assert.False(t, run(t, []time.Duration{lastLook, lastLook + quarter - 1, lastLook + quarter}), "a look a quarter minute later")
}

// An Open breaker is kept while its cool-down runs, however long it is
// idle; once the cool-down is over and it has been idle for IdleTimeout it
// is dropped. With a rampart.Forever cool-down it is never dropped.
func TestGroup_CB18_IdleOpenBreakerKeptWhileCoolingDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t, circuitbreaker.GroupConfig{IdleTimeout: time.Minute, Breaker: circuitbreaker.Config{
			Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 5 * time.Minute,
		}})
		fail(t, g.Breaker("a"), 1, errBoom)
		time.Sleep(5*time.Minute - 1)
		assert.Equal(t, []circuitbreaker.KeyState[string]{
			{Key: "a", Snapshot: circuitbreaker.Snapshot{Name: "a", State: circuitbreaker.Open, RetryAfter: 1, Cause: errBoom}},
		}, g.States())
		time.Sleep(time.Nanosecond)
		assert.Equal(t, 0, g.Len(), "cool-down over and idle: dropped")

		forever := newGroup(t, circuitbreaker.GroupConfig{IdleTimeout: time.Minute, Breaker: circuitbreaker.Config{
			Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: rampart.Forever,
		}})
		fail(t, forever.Breaker("a"), 1, errBoom)
		time.Sleep(24 * time.Hour)
		assert.Equal(t, 1, forever.Len())
	})
}

// A HalfOpen breaker with a probe in flight is kept, however idle.
func TestGroup_CB18_ProbeInFlightKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t, circuitbreaker.GroupConfig{IdleTimeout: time.Minute, Breaker: circuitbreaker.Config{
			Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second, ProbeLease: time.Hour,
		}})
		fail(t, g.Breaker("a"), 1, errBoom)
		time.Sleep(time.Second)
		p, err := g.Breaker("a").TryAcquire() // the probe, at 1s
		require.NoError(t, err)
		time.Sleep(10 * time.Minute)
		assert.Equal(t, 1, g.Len(), "10m1s: the look sees a used")
		time.Sleep(10 * time.Minute)
		assert.Equal(t, 1, g.Len(), "20m1s: idle for 10 minutes, but the probe is in flight")
		p.Success()
		assert.Equal(t, 0, g.Len(), "Closed now, and idle")
	})
}

// At MaxKeys a new key takes the place of a Closed breaker not used since
// the group last looked at it, passing over the used ones once (CLOCK).
func TestGroup_CB18_SizeBoundDropsAnUnusedClosedBreaker(t *testing.T) {
	g := newGroup(t, circuitbreaker.GroupConfig{MaxKeys: 3})
	g.Breaker("a")
	g.Breaker("b")
	g.Breaker("c")
	g.Breaker("a") // a is used since it was added; b and c are not
	g.Breaker("d")
	assert.Equal(t, []string{"a", "c", "d"}, keysOf(g), "b went: a had been used")
	g.Breaker("e")
	assert.Equal(t, []string{"a", "d", "e"}, keysOf(g), "the search goes on from where it stopped")
}

// When every held breaker is Open, a new key goes through the shared
// overflow breaker; none of the Open breakers is forgotten.
func TestGroup_CB18_SizeBoundWithAllOpenUsesOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t, circuitbreaker.GroupConfig{MaxKeys: 2, Breaker: circuitbreaker.Config{
			Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute,
		}})
		fail(t, g.Breaker("a"), 1, errBoom)
		fail(t, g.Breaker("b"), 1, errBoom)
		c := g.Breaker("c")
		assert.Same(t, g.Overflow(), c)
		assert.Same(t, c, g.Breaker("d"), "every key that does not fit shares it")
		assert.Equal(t, []string{"a", "b"}, keysOf(g))

		g.Breaker("a").Reset() // Closed: a can make room
		c = g.Breaker("c")
		assert.NotSame(t, g.Overflow(), c)
		assert.Equal(t, []string{"b", "c"}, keysOf(g))
	})
}

func TestGroup_CB18_SharedSwitch(t *testing.T) {
	var sw circuitbreaker.Switch
	g := newGroup(t, circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Switch: &sw}})
	a := g.Breaker("a")
	sw.ForceOpen(errors.New("maintenance"))
	for _, b := range []*circuitbreaker.Breaker{a, g.Breaker("b"), g.Overflow()} {
		p, err := b.TryAcquire()
		p.Ignore()
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
	}
	sw.Release()
	succeed(t, a, 1)
	succeed(t, g.Breaker("c"), 1)
}

// hostOf is the key of a request "host/path".
func hostOf(req string) string {
	for i := range len(req) {
		if req[i] == '/' {
			return req[:i]
		}
	}
	return req
}

func TestGroup_CB18_LayerGivesEachKeyItsOwnBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t, circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{
			Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Minute,
		}})
		layer, err := circuitbreaker.NewGroupLayer[string, string](g, hostOf, nil)
		require.NoError(t, err)
		calls := map[string]int{}
		svc := rampart.NewBuilder[string, string]().Layer(layer).Service(
			rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
				calls[hostOf(req)]++
				if hostOf(req) == "bad" {
					return "", errBoom
				}
				return "ok", nil
			}))
		for range 3 {
			_, err := svc.Call(t.Context(), "bad/x")
			_, gerr := svc.Call(t.Context(), "good/x")
			assert.NoError(t, gerr)
			_ = err
		}
		_, err = svc.Call(t.Context(), "bad/y")
		var oe *circuitbreaker.OpenError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "bad", oe.Name)
		assert.Equal(t, time.Minute, oe.RetryAfter())
		assert.Equal(t, errBoom, oe.Cause)
		assert.Equal(t, map[string]int{"bad": 2, "good": 3}, calls)

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err = svc.Call(ctx, "new/x")
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, []string{"bad", "good"}, keysOf(g), "a done context looks up no key")
	})
}

func TestGroup_CB18_ClassifiedLayer(t *testing.T) {
	g := newGroup(t, circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}}})
	layer, err := circuitbreaker.NewGroupLayer[string, int](g, hostOf, func(status int, err error) rampart.Outcome {
		if err != nil || status >= 500 {
			return rampart.Failure
		}
		return rampart.Success
	})
	require.NoError(t, err)
	svc := layer.Wrap(rampart.ServiceFunc[string, int](func(context.Context, string) (int, error) { return 503, nil }))
	status, err := svc.Call(t.Context(), "a/x")
	assert.Equal(t, 503, status)
	assert.NoError(t, err)
	_, err = svc.Call(t.Context(), "a/x")
	var oe *circuitbreaker.OpenError
	require.ErrorAs(t, err, &oe)
	assert.Same(t, circuitbreaker.ErrBadResponse, oe.Cause)
}

func TestGroup_CB18_LayerNilArguments(t *testing.T) {
	g := newGroup(t, circuitbreaker.GroupConfig{})
	_, err := circuitbreaker.NewGroupLayer[string, string](nil, hostOf, nil)
	assert.EqualError(t, err, "circuitbreaker: group layer: nil *Group (build one with circuitbreaker.NewGroup)")
	_, err = circuitbreaker.NewGroupLayer[string, string, string](g, nil, nil)
	assert.EqualError(t, err, "circuitbreaker: group layer: nil key func")

	layer, err := circuitbreaker.NewGroupLayer[string, string](g, hostOf, nil)
	require.NoError(t, err)
	_, err = layer.Wrap(nil).Call(t.Context(), "a/x")
	assert.ErrorIs(t, err, rampart.ErrNilService)
}

// TestGroup_CB18_Hammer looks up, trips, closes and evicts from many
// goroutines over more keys than the group holds, with a reader of States
// alongside; run with -race. The group never holds more than MaxKeys.
func TestGroup_CB18_Hammer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxKeys = 16
		g := newGroup(t, circuitbreaker.GroupConfig{MaxKeys: maxKeys, IdleTimeout: 4 * time.Millisecond, Breaker: circuitbreaker.Config{
			Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: 2 * time.Millisecond,
		}})
		layer, err := circuitbreaker.NewGroupLayer[int, int](g, func(req int) string { return strconv.Itoa(req % 40) }, nil)
		require.NoError(t, err)
		svc := layer.Wrap(rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) {
			if req%3 == 0 {
				time.Sleep(time.Millisecond)
				return 0, errBoom
			}
			return req, nil
		}))
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				for i := range 2000 {
					_, _ = svc.Call(context.Background(), i*7+w)
				}
			})
		}
		wg.Go(func() {
			for range 200 {
				assert.LessOrEqual(t, len(g.States()), maxKeys)
				time.Sleep(100 * time.Microsecond)
			}
		})
		wg.Wait()
		assert.LessOrEqual(t, g.Len(), maxKeys)
	})
}

func TestAllocs_Group_CB18(t *testing.T) {
	g := newGroup(t, circuitbreaker.GroupConfig{})
	layer, err := circuitbreaker.NewGroupLayer[string, int](g, hostOf, nil)
	require.NoError(t, err)
	svc := layer.Wrap(rampart.ServiceFunc[string, int](func(context.Context, string) (int, error) { return 1, nil }))
	ctx := context.Background()
	_, _ = svc.Call(ctx, "a/x")
	allocs := testing.AllocsPerRun(1000, func() {
		_, _ = svc.Call(ctx, "a/x")
		p, _ := g.Breaker("a").TryAcquire()
		p.Success()
	})
	assert.Zero(t, allocs)
}

// BenchmarkGroup_ClosedSuccess calls through a group layer over 64 held
// keys from every processor; compare with BenchmarkLayerParallel.
func BenchmarkGroup_ClosedSuccess(b *testing.B) {
	g := newGroup(b, circuitbreaker.GroupConfig{})
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = "host" + strconv.Itoa(i)
		g.Breaker(keys[i])
	}
	layer, err := circuitbreaker.NewGroupLayer[int, int](g, func(i int) string { return keys[i%len(keys)] }, nil)
	require.NoError(b, err)
	svc := layer.Wrap(ok)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			_, _ = svc.Call(ctx, i)
		}
	})
}

// BenchmarkGroup_OneHotKey is BenchmarkGroup_ClosedSuccess with every call
// on the same key.
func BenchmarkGroup_OneHotKey(b *testing.B) {
	g := newGroup(b, circuitbreaker.GroupConfig{})
	layer, err := circuitbreaker.NewGroupLayer[int, int](g, func(int) string { return "host" }, nil)
	require.NoError(b, err)
	svc := layer.Wrap(ok)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = svc.Call(ctx, 1)
		}
	})
}

// BenchmarkGroup_NewKeys adds a new key on every call, at the size bound.
func BenchmarkGroup_NewKeys(b *testing.B) {
	g := newGroup(b, circuitbreaker.GroupConfig{MaxKeys: 1000})
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = fmt.Sprint("host", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		g.Breaker(keys[i%len(keys)])
	}
}

// Subscribe reports the breakers held first, then each made and each
// dropped (idle, or to make room), in order, with its key; the overflow
// breaker is not reported, and after unsubscribing nothing is.
func TestGroup_CB18_SubscribeReportsMadeAndDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t, circuitbreaker.GroupConfig{IdleTimeout: time.Minute, MaxKeys: 3, Breaker: circuitbreaker.Config{
			Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour,
		}})
		a := g.Breaker("a")
		var got []circuitbreaker.GroupChange[string]
		stop := g.Subscribe(func(c circuitbreaker.GroupChange[string]) {
			got = append(got, c)
			g.Len() // a listener may call the group
		})
		require.Equal(t, []circuitbreaker.GroupChange[string]{{Key: "a", Breaker: a}}, got, "the breaker held, at once")
		b := g.Breaker("b")
		assert.Same(t, b, got[1].Breaker)
		assert.Equal(t, circuitbreaker.GroupChange[string]{Key: "b", Breaker: b}, got[1])
		c := g.Breaker("c")
		fail(t, a, 1, errBoom)
		fail(t, b, 1, errBoom) // a and b are Open: only c can make room
		d := g.Breaker("d")
		assert.Equal(t, []circuitbreaker.GroupChange[string]{
			{Key: "a", Breaker: a},
			{Key: "b", Breaker: b},
			{Key: "c", Breaker: c},
			{Key: "c", Breaker: c, Removed: true},
			{Key: "d", Breaker: d},
		}, got)
		fail(t, d, 1, errBoom)
		assert.Same(t, g.Overflow(), g.Breaker("e"), "all Open: e shares the overflow breaker")
		assert.Len(t, got, 5, "the overflow breaker is not reported")

		time.Sleep(2 * time.Hour) // cool-downs over, idle
		g.Len()
		assert.Equal(t, []circuitbreaker.GroupChange[string]{
			{Key: "a", Breaker: a, Removed: true},
			{Key: "b", Breaker: b, Removed: true},
			{Key: "d", Breaker: d, Removed: true},
		}, got[5:])

		stop()
		g.Breaker("f")
		assert.Len(t, got, 8, "nothing after unsubscribing")
		assert.NotPanics(t, func() { g.Subscribe(nil)() }, "a nil f is ignored")
	})
}

// Two listeners: one subscribed later sees the breakers held then, once,
// and the changes after; neither sees the other's first report.
func TestGroup_CB18_SubscribeLater(t *testing.T) {
	var zero circuitbreaker.Group[int] // the zero Group too
	var first, second []int
	defer zero.Subscribe(func(c circuitbreaker.GroupChange[int]) { first = append(first, c.Key) })()
	zero.Breaker(1)
	defer zero.Subscribe(func(c circuitbreaker.GroupChange[int]) { second = append(second, c.Key) })()
	zero.Breaker(2)
	zero.Breaker(1)
	assert.Equal(t, []int{1, 2}, first)
	assert.Equal(t, []int{1, 2}, second)
}

// A group measures the idle time of its breakers on the supplied clock.
func TestClock_CB20_GroupIdleTime(t *testing.T) {
	clk := newFakeClock()
	g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
		Breaker:     circuitbreaker.Config{Clock: clk},
		IdleTimeout: time.Minute,
	})
	require.NoError(t, err)
	g.Breaker("a")
	clk.Jump(time.Hour)
	assert.Equal(t, 1, g.Len(), "a wall step is no idle time")
	clk.Advance(time.Minute - time.Nanosecond)
	assert.Equal(t, 1, g.Len())
	clk.Advance(time.Nanosecond)
	assert.Equal(t, 0, g.Len(), "idle for a minute of the clock")
}

func TestGroup_CB19_BreakersAreNamedAfterTheirKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // the message prints the rest of the cool-down: exact on virtual time
		g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
			Breaker: circuitbreaker.Config{Name: "hosts", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour},
		})
		require.NoError(t, err)
		fail(t, g.Breaker("a.example"), 1, errBoom)
		oe := openErr(t, g.Breaker("a.example"))
		assert.Equal(t, `circuitbreaker "hosts/a.example": open (retry after 1h0m0s): tripped by: boom`, oe.Error())
		assert.Equal(t, "hosts/(overflow)", g.Overflow().State().Name)

		unnamed, err := circuitbreaker.NewGroup[int](circuitbreaker.GroupConfig{})
		require.NoError(t, err)
		assert.Equal(t, "42", unnamed.Breaker(42).State().Name)
		assert.Equal(t, "(overflow)", unnamed.Overflow().State().Name)
	})
}

func TestGroup_EV14_ReportsEachDroppedBreakerAsRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		g := newGroup(t, circuitbreaker.GroupConfig{
			Breaker: circuitbreaker.Config{Name: "g", Observer: &rec}, MaxKeys: 2, IdleTimeout: time.Minute,
		})
		g.Breaker("a")
		g.Breaker("b")
		require.Empty(t, removed(t, &rec))

		time.Sleep(time.Minute)
		require.Zero(t, g.Len()) // looks: both idle
		require.Equal(t, []string{"g/a", "g/b"}, removed(t, &rec))

		rec.Reset()
		g.Breaker("c")
		g.Breaker("d")
		g.Breaker("e") // no room: the CLOCK hand drops one not used since it was looked at
		require.Len(t, removed(t, &rec), 1)
	})
}

// TestGroup_CB15_CB18_ZeroValueIsDefaultGroup checks that a zero Group is
// usable through every method and through the group layers, whichever comes
// first, and behaves as NewGroup(GroupConfig{}): its breakers are
// New(Config{}) breakers named after their keys (five consecutive failures
// trip one for 30 seconds), and an idle key is dropped after 10 minutes.
func TestGroup_CB15_CB18_ZeroValueIsDefaultGroup(t *testing.T) {
	first := []struct {
		name string
		use  func(t *testing.T, g *circuitbreaker.Group[string])
	}{{
		name: "Breaker",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			require.NotNil(t, g.Breaker("x"))
		},
	}, {
		name: "Overflow",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			o := g.Overflow()
			require.NotNil(t, o)
			assert.Equal(t, "(overflow)", o.State().Name)
		},
	}, {
		name: "Len",
		use:  func(t *testing.T, g *circuitbreaker.Group[string]) { assert.Equal(t, 0, g.Len()) },
	}, {
		name: "States",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			assert.Empty(t, g.States())
		},
	}, {
		name: "Run",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			got, err := circuitbreaker.Run(t.Context(), g.Breaker("x"), func(context.Context) (int, error) { return 1, nil })
			require.NoError(t, err)
			assert.Equal(t, 1, got)
		},
	}, {
		name: "group layer",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			l, err := circuitbreaker.NewGroupLayer[string, string](g, func(req string) string { return req }, nil)
			require.NoError(t, err)
			resp, err := l.Wrap(&backend{}).Call(t.Context(), "x")
			require.NoError(t, err)
			assert.Equal(t, "ok:x", resp)
		},
	}, {
		name: "classified group layer",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			l, err := circuitbreaker.NewGroupLayer[string, string](g, func(req string) string { return req }, nil)
			require.NoError(t, err)
			resp, err := l.Wrap(&backend{}).Call(t.Context(), "x")
			require.NoError(t, err)
			assert.Equal(t, "ok:x", resp)
		},
	}}
	for _, tt := range first {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g circuitbreaker.Group[string]
				tt.use(t, &g)

				x := g.Breaker("x")
				require.NotNil(t, x)
				assert.Same(t, x, g.Breaker("x"))
				fail(t, x, 5, errBoom)
				assert.Equal(t, circuitbreaker.Snapshot{
					Name: "x", State: circuitbreaker.Open, RetryAfter: 30 * time.Second, Cause: errBoom,
				}, x.State())
				assert.Equal(t, "(overflow)", g.Overflow().State().Name)

				y := g.Breaker("y")
				time.Sleep(10 * time.Minute)
				assert.Equal(t, []string{"x"}, keysOf(&g), "y idle for 10 minutes is dropped; x's cool-down is over but it was used")
				assert.NotSame(t, y, g.Breaker("y"))
			})
		})
	}
}

// TestGroup_CB15_NilGroup calls every exported method of a nil *Group:
// it holds no breaker, and the nil *Breaker it hands out fails to
// acquire with an error instead of panicking.
func TestGroup_CB15_NilGroup(t *testing.T) {
	var g *circuitbreaker.Group[string]
	nilcheck.Calls(t, []nilcheck.Call{{
		Name: "Breaker",
		Call: func() any {
			b := g.Breaker("a")
			_, err := b.TryAcquire()
			return []any{b == nil, err.Error()}
		},
		Want: []any{true, "circuitbreaker: TryAcquire of a nil *Breaker (build one with circuitbreaker.New)"},
	}, {
		Name: "Subscribe",
		Call: func() any {
			unsubscribe := g.Subscribe(func(circuitbreaker.GroupChange[string]) { t.Error("called") })
			unsubscribe()
			return unsubscribe != nil
		},
		Want: true,
	}, {
		Name: "Len",
		Call: func() any { return g.Len() },
		Want: 0,
	}, {
		Name: "States",
		Call: func() any { return g.States() },
		Want: []circuitbreaker.KeyState[string](nil),
	}, {
		Name: "Overflow",
		Call: func() any { return g.Overflow() },
		Want: (*circuitbreaker.Breaker)(nil),
	}})
}
