package concurrency_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/observe"
)

func TestNewAdaptive_RejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  concurrency.AdaptiveConfig
		want string
	}{
		{name: "negative MinLimit", cfg: concurrency.AdaptiveConfig{MinLimit: -1},
			want: "concurrency: AdaptiveConfig.MinLimit must be >= 0 (0 means 1), got -1"},
		{name: "negative MaxLimit", cfg: concurrency.AdaptiveConfig{MaxLimit: -1},
			want: "concurrency: AdaptiveConfig.MaxLimit must be >= 0 (0 means 1000), got -1"},
		{name: "MaxLimit below MinLimit", cfg: concurrency.AdaptiveConfig{MinLimit: 10, MaxLimit: 5},
			want: "concurrency: AdaptiveConfig.MaxLimit must be >= MinLimit 10 (or 0), got 5"},
		{name: "InitialLimit below MinLimit", cfg: concurrency.AdaptiveConfig{MinLimit: 10, InitialLimit: 5},
			want: "concurrency: AdaptiveConfig.InitialLimit must be between MinLimit 10 and MaxLimit 1000 (or 0), got 5"},
		{name: "InitialLimit above MaxLimit", cfg: concurrency.AdaptiveConfig{MaxLimit: 8, InitialLimit: 9},
			want: "concurrency: AdaptiveConfig.InitialLimit must be between MinLimit 1 and MaxLimit 8 (or 0), got 9"},
		{name: "negative InitialLimit", cfg: concurrency.AdaptiveConfig{InitialLimit: -2},
			want: "concurrency: AdaptiveConfig.InitialLimit must be between MinLimit 1 and MaxLimit 1000 (or 0), got -2"},
		{name: "negative Window", cfg: concurrency.AdaptiveConfig{Window: -time.Second},
			want: "concurrency: AdaptiveConfig.Window must be >= 0 (0 means 1s), got -1s"},
		{name: "negative MaxWaiting", cfg: concurrency.AdaptiveConfig{MaxWaiting: -1},
			want: "concurrency: AdaptiveConfig.MaxWaiting must be >= 0 (0 means no bound), got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := concurrency.NewAdaptive(tc.cfg)
			assert.Nil(t, l)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestNewAdaptive_LM6_InitialLimitDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  concurrency.AdaptiveConfig
		want int
	}{
		{name: "zero config", cfg: concurrency.AdaptiveConfig{}, want: 20},
		{name: "MinLimit above 20", cfg: concurrency.AdaptiveConfig{MinLimit: 30}, want: 30},
		{name: "MaxLimit below 20", cfg: concurrency.AdaptiveConfig{MaxLimit: 5}, want: 5},
		{name: "MinLimit above the default MaxLimit", cfg: concurrency.AdaptiveConfig{MinLimit: 2000}, want: 2000},
		{name: "set", cfg: concurrency.AdaptiveConfig{InitialLimit: 7}, want: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := concurrency.NewAdaptive(tc.cfg)
			require.NoError(t, err)
			assert.Equal(t, tc.want, l.Limit())
			assert.Equal(t, 0, l.InFlight())
			assert.Equal(t, time.Duration(0), l.Baseline())
			assert.True(t, l.Ready())
		})
	}
}

func TestAdaptive_LM8_ZeroValue(t *testing.T) {
	var l concurrency.AdaptiveLimiter
	assert.Equal(t, 0, l.Limit())
	assert.Equal(t, 0, l.InFlight())
	assert.False(t, l.Ready())
	_, ok := l.TryAcquire()
	assert.False(t, ok)
	p, err := l.Acquire(context.Background())
	var le *concurrency.LimitedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, time.Duration(1<<63-1), le.RetryAfter())
	assert.EqualError(t, err, "concurrency: limit reached: the limiter has no slots (a nil or zero Limiter or AdaptiveLimiter; make one with New or NewAdaptive)")
	l.Release(p) // the zero Permit: ignored
	assert.Equal(t, 0, l.InFlight())

	_, err = concurrency.NewLayer[int, int](concurrency.Config{Limiter: &l, Mode: concurrency.Wait})
	assert.EqualError(t, err, "concurrency: limiter must be made by NewAdaptive, got a zero AdaptiveLimiter")
	_, err = concurrency.NewLayer[int, int](concurrency.Config{Limiter: (*concurrency.AdaptiveLimiter)(nil), Mode: concurrency.Wait})
	assert.EqualError(t, err, "concurrency: limiter must not be nil")
}

// fixedAdaptive returns an AdaptiveLimiter whose limit is n and stays n.
func fixedAdaptive(t *testing.T, n, maxWaiting int) *concurrency.AdaptiveLimiter {
	t.Helper()
	l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: n, MaxLimit: n, MaxWaiting: maxWaiting})
	require.NoError(t, err)
	return l
}

func TestAdaptive_LM8_AcquireWaitsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := fixedAdaptive(t, 1, 0)
		first, err := l.Acquire(t.Context())
		require.NoError(t, err)
		var order []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				p, err := l.Acquire(t.Context())
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				time.Sleep(time.Second)
				l.Release(p)
			})
			synctest.Wait() // queue them in order 0, 1, 2
		}
		assert.False(t, l.Ready())
		_, ok := l.TryAcquire()
		assert.False(t, ok, "TryAcquire must not jump the line")
		start := time.Now()
		l.Release(first)
		wg.Wait()
		assert.Equal(t, []int{0, 1, 2}, order)
		assert.Equal(t, 3*time.Second, time.Since(start))
		assert.Equal(t, 0, l.InFlight())
		assert.True(t, l.Ready())
	})
}

func TestAdaptive_LM8_AcquireBoundedByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := fixedAdaptive(t, 1, 0)
		held, err := l.Acquire(t.Context())
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		p, err := l.Acquire(ctx)
		assert.Equal(t, 3*time.Second, time.Since(start))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, concurrency.ErrLimited)
		assert.Equal(t, concurrency.Permit{}, p)
		l.Release(held)
		assert.Equal(t, 0, l.InFlight())
		assert.True(t, l.Ready(), "the waiter that gave up must not stay in line")

		// A done context takes no slot even when one is free.
		done, cancelDone := context.WithCancel(t.Context())
		cancelDone()
		_, err = l.Acquire(done)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 0, l.InFlight())
	})
}

func TestAdaptive_LM8_MaxWaitingRefusesWithRetryDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := fixedAdaptive(t, 1, 1)
		// Close a window of ten 40ms calls, so the refusal knows the latency.
		for range 10 {
			p, ok := l.TryAcquire()
			require.True(t, ok)
			time.Sleep(40 * time.Millisecond)
			l.Release(p)
		}
		time.Sleep(time.Second) // past the window's end
		p, ok := l.TryAcquire()
		require.True(t, ok)
		time.Sleep(40 * time.Millisecond)
		l.Release(p) // the eleventh call closes the window
		assert.Equal(t, 40*time.Millisecond, l.Baseline())

		held, ok := l.TryAcquire()
		require.True(t, ok)
		var wg sync.WaitGroup
		wg.Go(func() {
			p, err := l.Acquire(t.Context())
			if assert.NoError(t, err) {
				l.Release(p)
			}
		})
		synctest.Wait()
		start := time.Now()
		_, err := l.Acquire(t.Context())
		assert.Equal(t, time.Duration(0), time.Since(start), "refused at once")
		var le *concurrency.LimitedError
		require.ErrorAs(t, err, &le)
		assert.ErrorIs(t, err, concurrency.ErrLimited)
		assert.Equal(t, 40*time.Millisecond, le.RetryAfter())
		assert.False(t, le.PastDeadline)
		l.Release(held)
		wg.Wait()
	})
}

// stepWindow is the Window of the estimator tests: 110ms and 1ns, so that
// rounds of calls that divide 110ms end just before the window may close,
// and one call held 1ns longer closes it.
const stepWindow = 110*time.Millisecond + time.Nanosecond

// runWindow runs one window of l: rounds of n calls at once, each taking
// d, until stepWindow has passed. The last round's last call is held 1ns
// longer and closes the window with every call of the window in it; the
// average latency is d (the extra nanosecond vanishes in the integer
// average). d must divide 110ms.
func runWindow(t *testing.T, l *concurrency.AdaptiveLimiter, n int, d time.Duration) {
	t.Helper()
	runWindowWith(t, l, n, d, l.Release)
}

// runWindowWith is runWindow giving each slot back with release.
func runWindowWith(t *testing.T, l *concurrency.AdaptiveLimiter, n int, d time.Duration, release func(concurrency.Permit)) {
	t.Helper()
	rounds := int((stepWindow - time.Nanosecond) / d)
	for k := 1; k <= rounds; k++ {
		ps := make([]concurrency.Permit, n)
		for i := range ps {
			p, ok := l.TryAcquire()
			require.True(t, ok, "slot %d of %d (limit %d)", i, n, l.Limit())
			ps[i] = p
		}
		time.Sleep(d)
		if k == rounds {
			for _, p := range ps[1:] {
				release(p)
			}
			time.Sleep(time.Nanosecond)
			ps = ps[:1]
		}
		for _, p := range ps {
			release(p)
		}
	}
}

// The estimator moves the limit by the rules in its doc comment, once per
// window, with exact arithmetic.
func TestAdaptive_LM6_EstimatorSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{InitialLimit: 20, Window: stepWindow})
		require.NoError(t, err)
		ms := time.Millisecond

		// No queue, 20 of 20 in flight: grow by a tenth.
		runWindow(t, l, 20, 10*ms)
		assert.Equal(t, 22, l.Limit())
		assert.Equal(t, 10*ms, l.Baseline())

		// 10 of 22 in flight: not asked enough to grow.
		runWindow(t, l, 10, 10*ms)
		assert.Equal(t, 22, l.Limit())

		// 11ms at 22: 2 queued, between max(1, 1.1) and max(2, 2.2): stay.
		runWindow(t, l, 22, 11*ms)
		assert.Equal(t, 22, l.Limit())

		// 22ms at 22: 12 queued, above 2.2: down to 22 - 12 + 1.1 = 11.1.
		runWindow(t, l, 22, 22*ms)
		assert.Equal(t, 11, l.Limit())
		assert.Equal(t, 10*ms, l.Baseline())

		// 110ms at 11: 10 queued; 11 - 10 + 1 is below half of 11: 5.5,
		// rounded to 6.
		runWindow(t, l, 11, 110*ms)
		assert.Equal(t, 6, l.Limit())

		// A faster window lowers the baseline; no queue: grow by 1.
		runWindow(t, l, 6, 5*ms)
		assert.Equal(t, 5*ms, l.Baseline())
		assert.Equal(t, 7, l.Limit())
	})
}

// Past the first 256 calls of a window, one call in eight is timed; the
// window's average is still the calls' average, and the window closes at
// the first timed call to finish after its end, at most eight calls late.
func TestAdaptive_LM6_SampledWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{InitialLimit: 100, Window: stepWindow})
		require.NoError(t, err)
		runWindow(t, l, 100, 10*time.Millisecond) // 1100 calls
		late := 0
		for ; l.Baseline() == 0 && late < 100; late++ {
			p, ok := l.TryAcquire()
			require.True(t, ok)
			time.Sleep(10 * time.Millisecond)
			l.Release(p)
		}
		assert.LessOrEqual(t, late, 8)
		assert.Equal(t, 10*time.Millisecond, l.Baseline())
		assert.Equal(t, 110, l.Limit())
		assert.Equal(t, 0, l.InFlight())
	})
}

// The baseline never rises above the smallest window average while the
// limit is above MinLimit, however long the latency stays high; a window
// at more than twice the baseline lowers the limit by at least 1, so it
// reaches MinLimit; there, a slower window becomes the baseline, and the
// limit goes back to that of the last window that did not call for a
// drop, and grows no further while the baseline is the re-learned one. A
// window below half of it brings back the lowest baseline, and with it
// growth.
func TestAdaptive_LM7_BaselineRisesOnlyAtMinLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: 2, InitialLimit: 4, Window: stepWindow})
		require.NoError(t, err)
		ms := time.Millisecond
		runWindow(t, l, 4, 10*ms)
		require.Equal(t, 5, l.Limit())
		var limits []int
		for range 2 {
			runWindow(t, l, l.Limit(), 22*ms)
			limits = append(limits, l.Limit())
			assert.Equal(t, 10*ms, l.Baseline())
		}
		// 5: 2.73 queued, to 5 - 2.73 + 1; 3: 1.64 queued, under 2, but
		// 22ms is over twice 10ms: to at most 3 - 1.
		assert.Equal(t, []int{3, 2}, limits)
		runWindow(t, l, 2, 22*ms)
		assert.Equal(t, 22*ms, l.Baseline())
		assert.Equal(t, 4, l.Limit(), "back to the last limit measured without a drop")

		// No queue at the re-learned baseline, but no growth past 4.
		runWindow(t, l, 4, 22*ms)
		assert.Equal(t, 4, l.Limit())
		// 11ms is above half of 22ms: the baseline is lowered to it, as any
		// faster window lowers it, and the ceiling holds.
		runWindow(t, l, 4, 11*ms)
		assert.Equal(t, 11*ms, l.Baseline())
		assert.Equal(t, 4, l.Limit())
		// 5ms is below half of 11ms: fast again; the lowest baseline ever
		// seen was 10ms, and this window is faster still.
		runWindow(t, l, 4, 5*ms)
		assert.Equal(t, 5*ms, l.Baseline())
		assert.Equal(t, 5, l.Limit())
	})
}

// After a slow spell, a fast window restores the lowest baseline ever
// seen rather than adopting its own average, measured under load.
func TestAdaptive_LM7_RecoveryRestoresLowestBaseline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: 10, InitialLimit: 20, Window: stepWindow})
		require.NoError(t, err)
		ms := time.Millisecond
		runWindow(t, l, 20, 10*ms) // baseline 10ms; no queue: 22
		var limits []int
		for range 3 {
			runWindow(t, l, l.Limit(), 110*ms)
			limits = append(limits, l.Limit())
		}
		// 22 halves to 11, 11 falls to MinLimit 10, and 10 re-learns
		// 110ms and goes back to 20, the last limit that saw no drop.
		assert.Equal(t, []int{11, 10, 20}, limits)
		require.Equal(t, 110*ms, l.Baseline())
		// 22ms at 20 is below half of 110ms: the baseline is 10ms again (not
		// 22ms), so the window's 10.9 queued calls bring the limit down to
		// half of 20.
		runWindow(t, l, 20, 22*ms)
		assert.Equal(t, 10*ms, l.Baseline())
		assert.Equal(t, 10, l.Limit())
	})
}

func TestAdaptive_LM8_ReleaseIgnoresZeroAndExtra(t *testing.T) {
	l := fixedAdaptive(t, 2, 0)
	l.Release(concurrency.Permit{})
	assert.Equal(t, 0, l.InFlight())
	p, ok := l.TryAcquire()
	require.True(t, ok)
	l.Release(p)
	l.Release(p) // extra: no slot held, ignored
	assert.Equal(t, 0, l.InFlight())
	assert.True(t, l.Ready())
}

func TestAdaptiveLayer_LM9_RejectRefusesWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := fixedAdaptive(t, 1, 0)
		release := make(chan struct{})
		var calls atomic.Int64
		svc, err := wrap.Service(blocking(release, &calls), concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
		require.NoError(t, err)
		var wg sync.WaitGroup
		wg.Go(func() {
			got, err := svc.Call(context.Background(), 1)
			assert.NoError(t, err)
			assert.Equal(t, 10, got)
		})
		synctest.Wait()
		require.Equal(t, int64(1), calls.Load(), "the first call holds the only slot")
		_, err = svc.Call(context.Background(), 2)
		var le *concurrency.LimitedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, time.Duration(0), le.RetryAfter(), "no window closed yet")
		assert.Equal(t, int64(1), calls.Load())

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = svc.Call(ctx, 3)
		assert.ErrorIs(t, err, context.Canceled)
		close(release)
		wg.Wait()
		assert.Equal(t, 0, l.InFlight())
	})
}

func TestAdaptiveLayer_LM9_WaitAndPanicFreeSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := fixedAdaptive(t, 1, 0)
		svc, err := wrap.Service(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
			time.Sleep(time.Second)
			if req < 0 {
				panic("boom")
			}
			return req, nil
		}), concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: concurrency.Wait})
		require.NoError(t, err)
		var wg sync.WaitGroup
		wg.Go(func() {
			defer func() { assert.Equal(t, "boom", recover()) }()
			_, _ = svc.Call(t.Context(), -1)
		})
		synctest.Wait()
		start := time.Now()
		got, err := svc.Call(t.Context(), 5)
		require.NoError(t, err)
		assert.Equal(t, 5, got)
		assert.Equal(t, 2*time.Second, time.Since(start))
		wg.Wait()
		assert.Equal(t, 0, l.InFlight())
	})
}

// loadshed refuses while the adaptive limit is full, through Ready.
func TestAdaptiveLayer_LM9_LoadshedReadiness(t *testing.T) {
	l := fixedAdaptive(t, 1, 0)
	var _ loadshed.Readiness = l
	p, ok := l.TryAcquire()
	require.True(t, ok)
	svc, err := wrap.Service(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) { return req, nil }), loadshed.NewLayer, loadshed.Config{Readiness: l})
	require.NoError(t, err)
	_, err = svc.Call(context.Background(), 1)
	assert.ErrorIs(t, err, loadshed.ErrOverloaded)
	l.Release(p)
	got, err := svc.Call(context.Background(), 1)
	require.NoError(t, err)
	assert.Equal(t, 1, got)
}

func TestAdaptive_LM9_ZeroAllocs(t *testing.T) {
	l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: 4, MaxLimit: 4, Window: time.Nanosecond})
	require.NoError(t, err)
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		p, ok := l.TryAcquire()
		if ok {
			l.Release(p)
		}
	}), "TryAcquire/Release")
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		p, err := l.Acquire(ctx)
		if err == nil {
			l.Release(p)
		}
	}), "Acquire/Release")
	for name, mode := range modes {
		svc, err := wrap.Service(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) { return req, nil }), concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: mode})
		require.NoError(t, err)
		assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, 1) }), name)
	}
	// A refusal allocates nothing either.
	held := make([]concurrency.Permit, 4)
	for i := range held {
		held[i], _ = l.TryAcquire()
	}
	svc, err := wrap.Service(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) { return req, nil }), concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
	require.NoError(t, err)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, 1) }), "refusal")
	for _, p := range held {
		l.Release(p)
	}
}

// Many callers in Wait and Refuse mode against a limit that moves: every
// call is served or refused, no more run at once than MaxLimit, and every
// slot comes back.
func TestAdaptive_LM8_Hammer(t *testing.T) {
	l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: 1, MaxLimit: 8, InitialLimit: 4, Window: time.Millisecond, MaxWaiting: 16})
	require.NoError(t, err)
	var running, peak, served, refused atomic.Int64
	inner := rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Duration(req%200) * time.Microsecond)
		running.Add(-1)
		return req, nil
	})
	var wg sync.WaitGroup
	const goroutines, calls = 32, 200
	for g := range goroutines {
		mode := concurrency.Wait
		if g%2 == 1 {
			mode = concurrency.Refuse
		}
		svc, err := wrap.Service[int, int](inner, concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: mode})
		require.NoError(t, err)
		wg.Go(func() {
			for i := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Millisecond)
				_, err := svc.Call(ctx, i*g)
				cancel()
				switch {
				case err == nil:
					served.Add(1)
				case errors.Is(err, concurrency.ErrLimited), errors.Is(err, context.DeadlineExceeded):
					refused.Add(1)
				default:
					t.Errorf("unexpected error %v", err)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(goroutines*calls), served.Load()+refused.Load())
	assert.LessOrEqual(t, peak.Load(), int64(8))
	assert.Equal(t, 0, l.InFlight())
	assert.True(t, l.Ready())
}

// simBackend is a dependency with capacity calls' worth of workers: a call
// that starts with n calls in flight, itself included, takes unloaded
// while n <= capacity and unloaded × n/capacity above it, as if the
// workers shared their time among the calls in flight; or, when fixed is
// set, fixed whatever the load. The limiter is never told capacity.
type simBackend struct {
	capacity atomic.Int64
	unloaded atomic.Int64 // time.Duration
	fixed    atomic.Int64 // time.Duration; 0 means none
	failFast atomic.Int64 // time.Duration; when set, every call fails after it
	inFlight atomic.Int64
}

// errFailFast is the error of a simBackend failing fast.
var errFailFast = errors.New("sim: failing fast")

func (b *simBackend) Call(ctx context.Context, req int) (int, error) {
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	d := time.Duration(b.unloaded.Load())
	if c := b.capacity.Load(); n > c {
		d = d * time.Duration(n) / time.Duration(c)
	}
	if f := time.Duration(b.fixed.Load()); f > 0 {
		d = f
	}
	if f := time.Duration(b.failFast.Load()); f > 0 {
		time.Sleep(f)
		return 0, errFailFast
	}
	time.Sleep(d)
	return req, nil
}

// simPhase is a stretch of a simulation with a fixed backend.
type simPhase struct {
	length   time.Duration
	capacity int64
	unloaded time.Duration
	fixed    time.Duration // every call takes this long whatever the load, if set
	failFast time.Duration // every call fails after this long, if set
}

// simResult is what a simulation saw in one phase.
type simResult struct {
	// settled is how long after the phase began the limit entered
	// [lo, hi] for good (until the phase ended); -1 if it never did.
	settled time.Duration
	// limits are the limits sampled every 10ms after settling.
	minLimit, maxLimit int
	served, refused    int
	p99                time.Duration // of the served calls
	baseline           time.Duration // at the end of the phase
}

const simTick = 10 * time.Millisecond

// simulate runs clients callers in a closed loop against a simBackend
// behind lim in Refuse mode, through the phases, and reports each phase.
// A refused caller waits the refusal's RetryAfter (at least 1ms) before it
// calls again, as a retry layer honouring the hint would. lo and hi per
// phase are the band that counts as settled.
func simulate(t *testing.T, lim *concurrency.AdaptiveLimiter, clients int, phases []simPhase, band func(simPhase) (lo, hi int)) []simResult {
	t.Helper()
	be := &simBackend{}
	be.capacity.Store(phases[0].capacity)
	be.unloaded.Store(int64(phases[0].unloaded))
	svc, err := wrap.Service[int, int](be, concurrency.NewLayer, concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	require.NoError(t, err)

	var (
		mu      sync.Mutex
		phase   int
		latency = make([][]time.Duration, len(phases))
		refused = make([]int, len(phases))
	)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() { simClient(ctx, svc, &mu, &phase, latency, refused) })
	}

	results := make([]simResult, len(phases))
	for i, ph := range phases {
		mu.Lock()
		phase = i
		mu.Unlock()
		be.capacity.Store(ph.capacity)
		be.unloaded.Store(int64(ph.unloaded))
		be.fixed.Store(int64(ph.fixed))
		be.failFast.Store(int64(ph.failFast))
		lo, hi := band(ph)
		r := simResult{settled: -1, minLimit: 1 << 30}
		for at := time.Duration(0); at < ph.length; at += simTick {
			time.Sleep(simTick)
			n := lim.Limit()
			switch {
			case n < lo || n > hi:
				r.settled = -1
			case r.settled < 0:
				r.settled = at + simTick
				r.minLimit, r.maxLimit = n, n
			default:
				r.minLimit, r.maxLimit = min(r.minLimit, n), max(r.maxLimit, n)
			}
		}
		r.baseline = lim.Baseline()
		results[i] = r
	}
	stop()
	wg.Wait()
	for i := range results {
		slices.Sort(latency[i])
		results[i].served = len(latency[i])
		results[i].refused = refused[i]
		if n := len(latency[i]); n > 0 {
			results[i].p99 = latency[i][(n*99+99)/100-1]
		}
	}
	return results
}

func simClient(ctx context.Context, svc rampart.Service[int, int], mu *sync.Mutex, phase *int, latency [][]time.Duration, refused []int) {
	for ctx.Err() == nil {
		start := time.Now()
		_, err := svc.Call(ctx, 1)
		took := time.Since(start)
		mu.Lock()
		i := *phase
		var lim *concurrency.LimitedError
		switch {
		case err == nil:
			latency[i] = append(latency[i], took)
		case errors.As(err, &lim):
			refused[i]++
		}
		mu.Unlock()
		if err != nil {
			var delay time.Duration
			if lim != nil {
				delay = lim.RetryAfter()
			}
			time.Sleep(max(delay, time.Millisecond))
		}
	}
}

// simConfig is the limiter of the simulations: windows of five unloaded
// latencies.
var simConfig = concurrency.AdaptiveConfig{MinLimit: 1, MaxLimit: 1000, InitialLimit: 20, Window: 50 * time.Millisecond}

// within20 is the band ±20% around the phase's capacity.
func within20(ph simPhase) (lo, hi int) {
	return int(float64(ph.capacity) * 0.8), int(float64(ph.capacity) * 1.2)
}

// The limit finds a capacity it is not told, under four times as many
// callers as the capacity, and follows it when it halves: each within
// 500ms (ten windows of 50ms), then stays within ±20% of the capacity, and
// the served calls' p99 in each phase, transients included, stays within
// twice the unloaded latency.
func TestAdaptive_LM6_SimulationFindsAndFollowsCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.NewAdaptive(simConfig)
		require.NoError(t, err)
		const unloaded = 10 * time.Millisecond
		phases := []simPhase{
			{length: 10 * time.Second, capacity: 40, unloaded: unloaded},
			{length: 10 * time.Second, capacity: 20, unloaded: unloaded},
		}
		res := simulate(t, lim, 160, phases, within20)
		for i, r := range res {
			t.Logf("phase %d (capacity %d): settled after %v, limit %d..%d, served %d, refused %d, p99 %v, baseline %v",
				i, phases[i].capacity, r.settled, r.minLimit, r.maxLimit, r.served, r.refused, r.p99, r.baseline)
			assert.GreaterOrEqual(t, r.settled, time.Duration(0), "phase %d never settled", i)
			assert.LessOrEqual(t, r.settled, 500*time.Millisecond, "phase %d settled too late", i)
			assert.LessOrEqual(t, r.p99, 2*unloaded, "phase %d p99", i)
			assert.Equal(t, unloaded, r.baseline, "phase %d baseline", i)
		}
	})
}

// During a long incident in which the dependency can take only a tenth of
// its calls (its latency grows with the load, as an overloaded service's
// does), the baseline stays at the unloaded latency for the whole minute,
// so the limit comes down within 500ms and stays near the reduced capacity
// instead of drifting back up, and it recovers within 1s (twenty windows)
// when the incident ends.
func TestAdaptive_LM7_BaselineHoldsThroughLongIncident(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.NewAdaptive(simConfig)
		require.NoError(t, err)
		const unloaded = 10 * time.Millisecond
		phases := []simPhase{
			{length: 5 * time.Second, capacity: 40, unloaded: unloaded},
			{length: time.Minute, capacity: 4, unloaded: unloaded},
			{length: 5 * time.Second, capacity: 40, unloaded: unloaded},
		}
		res := simulate(t, lim, 160, phases, func(ph simPhase) (lo, hi int) {
			if ph.capacity == 4 {
				return 1, 8 // never above twice the reduced capacity
			}
			return within20(ph)
		})
		for i, r := range res {
			t.Logf("phase %d (capacity %d): settled after %v, limit %d..%d, served %d, p99 %v, baseline %v",
				i, phases[i].capacity, r.settled, r.minLimit, r.maxLimit, r.served, r.p99, r.baseline)
			assert.Equal(t, unloaded, r.baseline, "phase %d baseline", i)
		}
		assert.GreaterOrEqual(t, res[1].settled, time.Duration(0), "incident: limit never settled at or below 8")
		assert.LessOrEqual(t, res[1].settled, 500*time.Millisecond, "incident: limit came down too late")
		assert.GreaterOrEqual(t, res[2].settled, time.Duration(0), "after the incident: limit never recovered")
		assert.LessOrEqual(t, res[2].settled, time.Second, "after the incident: limit recovered too late")
	})
}

// When the dependency becomes uniformly slower, at any load (three times
// the latency, same capacity), the limit first falls to MinLimit; a window
// there shows the new unloaded latency, the baseline rises to it, and the
// limit climbs back to within ±20% of the capacity within 5s (about 33
// windows of 150ms: the climb from MinLimit is a tenth per window).
func TestAdaptive_LM7_BaselineRelearnedAtMinLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := simConfig
		cfg.Window = 150 * time.Millisecond // five of the new unloaded latencies
		lim, err := concurrency.NewAdaptive(cfg)
		require.NoError(t, err)
		phases := []simPhase{
			{length: 5 * time.Second, capacity: 40, unloaded: 10 * time.Millisecond},
			{length: 20 * time.Second, capacity: 40, unloaded: 30 * time.Millisecond},
		}
		res := simulate(t, lim, 160, phases, within20)
		for i, r := range res {
			t.Logf("phase %d (unloaded %v): settled after %v, limit %d..%d, served %d, p99 %v, baseline %v",
				i, phases[i].unloaded, r.settled, r.minLimit, r.maxLimit, r.served, r.p99, r.baseline)
		}
		// The window at MinLimit that re-learns it may still hold a call or
		// two of the old latency.
		assert.GreaterOrEqual(t, res[1].baseline, 25*time.Millisecond)
		assert.LessOrEqual(t, res[1].baseline, 30*time.Millisecond)
		assert.GreaterOrEqual(t, res[1].settled, time.Duration(0), "never recovered")
		assert.LessOrEqual(t, res[1].settled, 5*time.Second, "recovered too late")
	})
}

// A 600s incident in which every call takes 1s (10ms unloaded, a capacity
// of 20, MaxLimit 200) does not become the limiter's new normal, whether
// the dependency's latency still grows with the load (its 20 workers each
// take 1s a call) or not at all (every call waits 1s on something
// else). The limit falls to MinLimit, re-learns 1s there, and goes back
// to the capacity it measured before the incident: from 30s into the
// incident to its end it stays within ±20% of 20 (it was climbing to
// MaxLimit and staying there after recovery with a baseline of 98ms,
// learned at a limit of 200). Within 60s of recovery it is within ±20% of
// 20 for good, and the baseline is the unloaded 10ms again.
func TestAdaptive_LM7_LongIncidentIsNotTheNewNormal(t *testing.T) {
	const unloaded = 10 * time.Millisecond
	for name, incident := range map[string]simPhase{
		"latency grows with load": {length: 600 * time.Second, capacity: 20, unloaded: time.Second},
		"latency fixed":           {length: 600 * time.Second, capacity: 20, unloaded: unloaded, fixed: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MaxLimit: 200})
				require.NoError(t, err)
				phases := []simPhase{
					{length: 10 * time.Second, capacity: 20, unloaded: unloaded},
					incident,
					{length: 70 * time.Second, capacity: 20, unloaded: unloaded},
				}
				res := simulate(t, lim, 200, phases, func(simPhase) (lo, hi int) { return 16, 24 })
				for i, r := range res {
					t.Logf("phase %d: settled after %v, limit %d..%d, served %d, p99 %v, baseline %v",
						i, r.settled, r.minLimit, r.maxLimit, r.served, r.p99, r.baseline)
				}
				assert.GreaterOrEqual(t, res[1].settled, time.Duration(0), "incident: limit never settled within 16..24")
				assert.LessOrEqual(t, res[1].settled, 30*time.Second, "incident: limit settled too late")
				assert.Equal(t, time.Second, res[1].baseline, "incident baseline")
				assert.GreaterOrEqual(t, res[2].settled, time.Duration(0), "after the incident: limit never settled within 16..24")
				assert.LessOrEqual(t, res[2].settled, 60*time.Second, "after the incident: limit settled too late")
				assert.Equal(t, unloaded, res[2].baseline, "baseline after the incident")
			})
		})
	}
}

// A dependency that fails fast (every call an error after 1ms, a tenth of
// its unloaded latency: an outage answered at once, or a breaker below
// refusing) for a minute teaches the limiter nothing: a failed call
// faster than the baseline is no latency sample, since its speed says
// nothing about a queue in the dependency. So the limit and the baseline
// stay where they were through the outage, and the limit is at the
// capacity from the first tick after it (Netflix concurrency-limits
// issue 176: dropped calls with about no latency). Before, the baseline
// fell to 1ms, the limit climbed, and the recovered dependency's 10ms
// looked like ten times the baseline: the limit collapsed to MinLimit.
func TestAdaptive_LM14_FastFailuresAreNoSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.NewAdaptive(simConfig)
		require.NoError(t, err)
		const unloaded = 10 * time.Millisecond
		phases := []simPhase{
			{length: 5 * time.Second, capacity: 20, unloaded: unloaded},
			{length: time.Minute, capacity: 20, unloaded: unloaded, failFast: time.Millisecond},
			{length: 5 * time.Second, capacity: 20, unloaded: unloaded},
		}
		res := simulate(t, lim, 80, phases, within20)
		t.Logf("before, during and after the outage: %+v", res)
		assert.Equal(t, []time.Duration{unloaded, unloaded, unloaded},
			[]time.Duration{res[0].baseline, res[1].baseline, res[2].baseline}, "baselines")
		assert.Equal(t, simTick, res[1].settled, "the outage moved the limit out of 16..24")
		assert.Equal(t, simTick, res[2].settled, "after the outage the limit left 16..24")
	})
}

// One window slowed ten times (a stop-the-world pause, a noisy neighbour:
// Netflix concurrency-limits#155) costs at most half the limit, never a
// collapse to MinLimit, and the limit climbs back by a tenth a window: 22
// → 11, then back to 22 or more after 8 normal windows.
func TestAdaptive_LM6_OneSlowWindowHalvesAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{InitialLimit: 20, Window: stepWindow})
		require.NoError(t, err)
		ms := time.Millisecond
		runWindow(t, l, 20, 10*ms)
		require.Equal(t, 22, l.Limit())
		runWindow(t, l, 22, 110*ms) // 20 queued by Vegas: to 3.1, held at half
		limits := []int{l.Limit()}
		for range 8 {
			runWindow(t, l, l.Limit(), 10*ms)
			limits = append(limits, l.Limit())
		}
		assert.Equal(t, []int{11, 12, 13, 14, 15, 17, 19, 21, 23}, limits)
		assert.Equal(t, 10*ms, l.Baseline(), "the pause did not move the baseline")
	})
}

// A quiet period of cheap calls (one call at a time taking 100µs: health
// checks or cache hits at night, Netflix concurrency-limits#125) teaches a
// baseline that the day's 10ms calls cannot meet: the limit falls to
// MinLimit, re-learns 10ms there and returns to 20. Only a window that used
// at least half its limit measured a capacity, and the quiet windows did
// not, so 20 is no ceiling: the limit climbs on to the dependency's 40
// (10ms up to 40 in flight, 10ms × n/40 above) and stays within ±20% of
// it. Before, the quiet windows' 20 held it at half the capacity for good.
func TestAdaptive_LM7_QuietCheapCallsSetNoCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{InitialLimit: 20, Window: stepWindow})
		require.NoError(t, err)
		for range 5 {
			runWindow(t, l, 1, 100*time.Microsecond)
		}
		require.Equal(t, 100*time.Microsecond, l.Baseline())
		require.Equal(t, 20, l.Limit(), "one call at a time: no growth")

		var limits []int
		for r := range 1000 { // rounds of the day's callers, as many as the limit admits
			var ps []concurrency.Permit
			for p, ok := l.TryAcquire(); ok && len(ps) < 200; p, ok = l.TryAcquire() {
				ps = append(ps, p)
			}
			time.Sleep(10 * time.Millisecond * time.Duration(max(40, len(ps))) / 40)
			for _, p := range ps {
				l.Release(p)
			}
			if r%25 == 0 {
				limits = append(limits, l.Limit())
			}
		}
		assert.Equal(t, []int{17, 5, 2, 20, 24, 29, 35, 43}, limits[:8])
		for i, n := range limits[7:] {
			assert.True(t, n >= 32 && n <= 48, "limit %d at sample %d", n, i+7)
		}
		assert.Equal(t, 10*time.Millisecond, l.Baseline())
	})
}

// ReleaseFailed: a failed call faster than the baseline is no sample, one
// at least as slow is; before the first window there is no baseline and
// no failed call counts.
func TestAdaptive_LM14_ReleaseFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := time.Millisecond
		fresh, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{InitialLimit: 20, Window: stepWindow})
		require.NoError(t, err)
		runWindowWith(t, fresh, 20, 10*ms, fresh.ReleaseFailed)
		assert.Equal(t, time.Duration(0), fresh.Baseline(), "no baseline from failures alone")
		assert.Equal(t, 20, fresh.Limit())

		l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{InitialLimit: 20, Window: stepWindow})
		require.NoError(t, err)
		runWindow(t, l, 20, 10*ms) // baseline 10ms; no queue: 22
		require.Equal(t, 22, l.Limit())
		runWindowWith(t, l, 22, 5*ms, l.ReleaseFailed)
		assert.Equal(t, 10*ms, l.Baseline(), "failing fast lowers nothing")
		assert.Equal(t, 22, l.Limit(), "no window closed")

		// A failure at 22ms is the latency the caller felt: the window,
		// past its end, closes at the tenth: 12 queued at 22, down to 11
		// as in TestAdaptive_LM6_EstimatorSteps.
		ps := make([]concurrency.Permit, 22)
		for i := range ps {
			p, ok := l.TryAcquire()
			require.True(t, ok)
			ps[i] = p
		}
		time.Sleep(22 * ms)
		for _, p := range ps {
			l.ReleaseFailed(p)
		}
		assert.Equal(t, 11, l.Limit())
		assert.Equal(t, 0, l.InFlight())
	})
}

func TestConcurrency_EV6_AdaptiveRefusedAndQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: 1, MaxLimit: 1, MaxWaiting: 1})
		require.NoError(t, err)
		svc, err := wrap.Service(sleeper, concurrency.NewLayer, concurrency.Config{Limiter: lim, Name: "adaptive", Observer: &rec})
		require.NoError(t, err)

		go svc.Call(t.Context(), 2*time.Second) // holds the only slot
		synctest.Wait()
		go svc.Call(t.Context(), 0) // waits: the one waiter allowed
		synctest.Wait()
		_, errFull := svc.Call(t.Context(), 0) // refused at once: MaxWaiting
		require.ErrorIs(t, errFull, concurrency.ErrLimited)
		time.Sleep(3 * time.Second)

		require.Equal(t, []observe.Event{
			{Source: observe.Concurrency, Name: "adaptive", Kind: observe.Refused, Err: errFull},
			{Source: observe.Concurrency, Name: "adaptive", Kind: observe.Queued, Duration: 2 * time.Second},
		}, rec.Events())
	})
}

// Tune brings the limit within the new bounds at once, handing the slots
// a higher limit frees to the callers waiting, in order; a lower one gives
// no slot until InFlight is below it. Each layer's Observer is told.
func TestAdaptiveTune_LM15_BoundsMoveTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{InitialLimit: 4})
		require.NoError(t, err)
		var rec observetest.Recorder
		_, err = concurrency.NewLayer[int, int](concurrency.Config{Limiter: l, Name: "db", Observer: &rec})
		require.NoError(t, err)
		var held []concurrency.Permit
		for range 4 {
			p, ok := l.TryAcquire()
			require.True(t, ok)
			held = append(held, p)
		}
		got := make(chan int, 2)
		finish := make(chan struct{})
		for i := range 2 {
			go func() {
				p, err := l.Acquire(t.Context())
				assert.NoError(t, err)
				got <- i
				<-finish
				l.Release(p)
			}()
			synctest.Wait() // in line in order
		}
		require.NoError(t, l.Tune(concurrency.AdaptiveTuning{MinLimit: 5}))
		synctest.Wait()
		assert.Equal(t, 5, l.Limit())
		assert.Equal(t, 0, <-got, "the first in line")
		assert.Empty(t, got)

		require.NoError(t, l.Tune(concurrency.AdaptiveTuning{MaxLimit: 2}))
		assert.Equal(t, 2, l.Limit())
		for _, p := range held[:3] {
			l.Release(p)
		}
		synctest.Wait()
		assert.Equal(t, 2, l.InFlight(), "5 held, 3 given back: none handed on")
		assert.Empty(t, got)
		l.Release(held[3])
		synctest.Wait()
		assert.Equal(t, 1, <-got, "a slot under the new limit")
		assert.Equal(t, []observe.Event{
			{Source: observe.Concurrency, Name: "db", Kind: observe.Tuned},
			{Source: observe.Concurrency, Name: "db", Kind: observe.Tuned},
		}, rec.Events())
		close(finish)
		synctest.Wait()
		assert.Equal(t, 0, l.InFlight())
	})
}

// A new Window applies from the next window: the open one closes when it
// would have. The baseline is kept.
func TestAdaptiveTune_LM15_WindowFromTheNextWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{InitialLimit: 1, MaxLimit: 1, Window: stepWindow})
		require.NoError(t, err)
		ms := time.Millisecond
		runWindow(t, l, 1, 10*ms)
		require.Equal(t, 10*ms, l.Baseline())
		require.NoError(t, l.Tune(concurrency.AdaptiveTuning{MaxLimit: 1, Window: 10 * stepWindow}))
		runWindow(t, l, 1, 5*ms) // closes the window open at the Tune
		assert.Equal(t, 5*ms, l.Baseline())
		for range 9 {
			runWindow(t, l, 1, 2*ms)
			assert.Equal(t, 5*ms, l.Baseline(), "the window of 10 × stepWindow is still open")
		}
		runWindow(t, l, 1, 2*ms)
		for range 8 { // past 256 samples one call in eight is timed: the window closes at most eight calls late
			p, ok := l.TryAcquire()
			require.True(t, ok)
			time.Sleep(2 * ms)
			l.Release(p)
		}
		assert.Equal(t, 2*ms, l.Baseline(), "closed after 10 × stepWindow")
	})
}

// A new MaxWaiting applies to the calls that come to wait after it; the
// calls already waiting keep their place.
func TestAdaptiveTune_LM15_MaxWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := fixedAdaptive(t, 1, 0)
		p, ok := l.TryAcquire()
		require.True(t, ok)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		for range 2 {
			go func() { _, _ = l.Acquire(ctx) }()
		}
		synctest.Wait()
		require.NoError(t, l.Tune(concurrency.AdaptiveTuning{MinLimit: 1, MaxLimit: 1, MaxWaiting: 1}))
		_, err := l.Acquire(t.Context())
		require.ErrorIs(t, err, concurrency.ErrLimited, "two wait: the new bound of one refuses")
		l.Release(p)
		cancel()
		synctest.Wait()
	})
}

// Bad tunings are NewAdaptive's errors and change nothing; a nil or zero
// limiter is refused.
func TestAdaptiveTune_LM15_BadTuning(t *testing.T) {
	l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: 2, MaxLimit: 8, InitialLimit: 4})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		t    concurrency.AdaptiveTuning
		want string
	}{
		{name: "negative MinLimit", t: concurrency.AdaptiveTuning{MinLimit: -1},
			want: "concurrency: AdaptiveConfig.MinLimit must be >= 0 (0 means 1), got -1"},
		{name: "MaxLimit below MinLimit", t: concurrency.AdaptiveTuning{MinLimit: 10, MaxLimit: 5},
			want: "concurrency: AdaptiveConfig.MaxLimit must be >= MinLimit 10 (or 0), got 5"},
		{name: "negative Window", t: concurrency.AdaptiveTuning{Window: -time.Second},
			want: "concurrency: AdaptiveConfig.Window must be >= 0 (0 means 1s), got -1s"},
		{name: "negative MaxWaiting", t: concurrency.AdaptiveTuning{MaxWaiting: -1},
			want: "concurrency: AdaptiveConfig.MaxWaiting must be >= 0 (0 means no bound), got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.EqualError(t, l.Tune(tc.t), tc.want)
			assert.Equal(t, 4, l.Limit())
		})
	}
	assert.EqualError(t, (*concurrency.AdaptiveLimiter)(nil).Tune(concurrency.AdaptiveTuning{}), "concurrency: Tune of a nil *AdaptiveLimiter")
	assert.EqualError(t, new(concurrency.AdaptiveLimiter).Tune(concurrency.AdaptiveTuning{}), "concurrency: Tune of a zero AdaptiveLimiter: make it with NewAdaptive")
}

// Tune while calls flow (run with -race): the limit stays within the
// bounds of the last Tune.
func TestAdaptiveTune_LM15_WhileCallsFlow(t *testing.T) {
	l, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{Window: time.Millisecond, MaxWaiting: 4})
	require.NoError(t, err)
	svc, err := wrap.Service(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, nil }), concurrency.NewLayer, concurrency.Config{Limiter: l})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _ = svc.Call(ctx, 0)
			}
		})
	}
	for i := range 200 {
		require.NoError(t, l.Tune(concurrency.AdaptiveTuning{MinLimit: 1 + i%3, MaxLimit: 3 + i%5, Window: time.Duration(1+i%4) * time.Millisecond, MaxWaiting: i % 3}))
	}
	require.NoError(t, l.Tune(concurrency.AdaptiveTuning{MinLimit: 2, MaxLimit: 3}))
	cancel()
	wg.Wait()
	assert.GreaterOrEqual(t, l.Limit(), 2)
	assert.LessOrEqual(t, l.Limit(), 3)
	assert.Equal(t, 0, l.InFlight())
}

// TestAdaptive_NZ1_NilAdaptiveLimiter calls every exported method of a
// nil *AdaptiveLimiter: it has no slots, as the zero AdaptiveLimiter, and
// nothing panics.
func TestAdaptive_NZ1_NilAdaptiveLimiter(t *testing.T) {
	var l *concurrency.AdaptiveLimiter
	live := fixedAdaptive(t, 1, 0)
	held, ok := live.TryAcquire() // a Permit that is not zero
	require.True(t, ok)
	defer live.Release(held)
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Limit", Call: func() any { return l.Limit() }, Want: 0},
		{Name: "InFlight", Call: func() any { return l.InFlight() }, Want: 0},
		{Name: "Baseline", Call: func() any { return l.Baseline() }, Want: time.Duration(0)},
		{Name: "Ready", Call: func() any { return l.Ready() }, Want: false},
		{Name: "ReadyFor", Call: func() any { return l.ReadyFor(rampart.WithCriticality(t.Context(), rampart.Critical)) }, Want: false},
		{Name: "TryAcquire", Call: func() any { p, ok := l.TryAcquire(); return []any{p, ok} }, Want: []any{concurrency.Permit{}, false}},
		{Name: "Acquire", Call: func() any {
			p, err := l.Acquire(t.Context())
			wait, hinted := rampart.RetryAfter(err)
			return []any{p, err.Error(), errors.Is(err, concurrency.ErrLimited), wait, hinted}
		}, Want: []any{concurrency.Permit{}, "concurrency: limit reached: the limiter has no slots (a nil or zero Limiter or AdaptiveLimiter; make one with New or NewAdaptive)", true, rampart.Forever, true}},
		{Name: "Release", Call: func() any { l.Release(held); return l.InFlight() }, Want: 0},
		{Name: "ReleaseFailed", Call: func() any { l.ReleaseFailed(held); return l.InFlight() }, Want: 0},
		{Name: "Tune", Call: func() any { return l.Tune(concurrency.AdaptiveTuning{}).Error() }, Want: "concurrency: Tune of a nil *AdaptiveLimiter"},
	})
	assert.Equal(t, 1, live.InFlight(), "the nil limiter's releases left the live one's slot held")
}
