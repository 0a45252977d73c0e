package concurrency_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

// A Limiter is usable on its own, as semaphore.Weighted is: Acquire
// blocks until a slot frees, in arrival order, and Release frees it.
func TestLimiter_LM4_AcquireWaitsForRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.New(1)
		require.NoError(t, err)
		require.NoError(t, l.Acquire(t.Context()))
		assert.Equal(t, 1, l.InFlight())

		start := time.Now()
		var order []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, name := range []string{"first", "second"} {
			wg.Go(func() {
				if err := l.Acquire(t.Context()); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
				l.Release()
			})
			synctest.Wait() // first queues before second
		}
		time.Sleep(20 * time.Millisecond)
		l.Release()
		wg.Wait()
		assert.Equal(t, []string{"first", "second"}, order)
		assert.Equal(t, 40*time.Millisecond, time.Since(start))
		assert.Zero(t, l.InFlight())
	})
}

// Acquire gives up when its context is done, takes no slot, and returns an
// error wrapping ctx.Err() that is not a refusal.
func TestLimiter_LM4_AcquireBoundedByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.New(1)
		require.NoError(t, err)
		require.True(t, l.TryAcquire())

		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = l.Acquire(ctx)
		assert.Equal(t, 30*time.Millisecond, time.Since(start))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, concurrency.ErrLimited)
		assert.EqualError(t, err, "concurrency: waiting for a slot: context deadline exceeded")
		assert.Equal(t, 1, l.InFlight())
		l.Release()
	})
}

// A context already done takes no slot, even when one is free.
func TestLimiter_LM4_AcquireDoneContextTakesNoSlot(t *testing.T) {
	l, err := concurrency.New(1)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, l.Acquire(ctx), context.Canceled)
	assert.Zero(t, l.InFlight())
}

func TestLimiter_LM4_TryAcquire(t *testing.T) {
	l, err := concurrency.New(2)
	require.NoError(t, err)
	assert.True(t, l.TryAcquire())
	assert.True(t, l.TryAcquire())
	assert.False(t, l.TryAcquire(), "every slot is taken")
	assert.Equal(t, 2, l.InFlight())
	assert.False(t, l.Ready())
	l.Release()
	assert.True(t, l.Ready())
	assert.True(t, l.TryAcquire())
	l.Release()
	l.Release()
	assert.Zero(t, l.InFlight())
}

// A Release with no slot held is ignored: it never panics, and never lets
// the Limiter hand out more than Max slots afterwards.
func TestLimiter_LM4_ExtraReleaseIgnored(t *testing.T) {
	l, err := concurrency.New(1)
	require.NoError(t, err)
	l.Release()
	assert.Zero(t, l.InFlight())
	assert.True(t, l.TryAcquire())
	assert.False(t, l.TryAcquire(), "the extra Release freed no slot")
	l.Release()
	l.Release()
	assert.Zero(t, l.InFlight())
}

func TestMode_String(t *testing.T) {
	assert.Equal(t, "Wait", concurrency.Wait.String())
	assert.Equal(t, "Refuse", concurrency.Refuse.String())
	assert.Equal(t, "Mode(7)", concurrency.Mode(7).String())
}

// The refusal has the same shape as ratelimit's: a RetryAfter method that
// carries RetryAfter, zero when not known.
func TestLimitedError_LM5_RetryDelay(t *testing.T) {
	err := &concurrency.LimitedError{Wait: 2 * time.Second}
	assert.Equal(t, 2*time.Second, err.RetryAfter())
	assert.EqualError(t, err, "concurrency: limit reached (retry after 2s)")
	assert.EqualError(t, &concurrency.LimitedError{PastDeadline: true, Wait: time.Second}, "concurrency: limit reached: next slot in 1s, at or past the context deadline")
	assert.ErrorIs(t, err, concurrency.ErrLimited)
}

// take takes n slots with TryAcquire, requiring each.
func take(t *testing.T, l *concurrency.Limiter, n int) {
	t.Helper()
	for range n {
		require.True(t, l.TryAcquire())
	}
}

// A larger Max frees its slots at once.
func TestLimiter_LM12_SetMaxRaises(t *testing.T) {
	l, err := concurrency.New(1)
	require.NoError(t, err)
	take(t, l, 1)
	require.False(t, l.TryAcquire())
	require.NoError(t, l.SetMax(3))
	assert.Equal(t, 3, l.Max())
	assert.True(t, l.Ready())
	take(t, l, 2)
	assert.False(t, l.TryAcquire(), "three slots")
	assert.False(t, l.Ready())
}

// A smaller Max takes slots back as their calls release them: no new
// call gets one until the calls in flight are below it.
func TestLimiter_LM12_SetMaxLowers(t *testing.T) {
	l, err := concurrency.New(3)
	require.NoError(t, err)
	take(t, l, 3)
	require.NoError(t, l.SetMax(1))
	assert.Equal(t, 1, l.Max())
	assert.Equal(t, 3, l.InFlight(), "the calls in flight go on")
	l.Release()
	assert.False(t, l.TryAcquire(), "two in flight, max 1")
	assert.False(t, l.Ready())
	l.Release()
	assert.False(t, l.TryAcquire(), "one in flight, max 1")
	l.Release()
	assert.True(t, l.Ready())
	assert.True(t, l.TryAcquire(), "none in flight")
	assert.False(t, l.TryAcquire())
	l.Release()
}

// A larger Max forgives what a smaller one is still owed, and frees the
// rest to the calls waiting in Acquire.
func TestLimiter_LM12_SetMaxReplacesAPendingOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := concurrency.New(2)
		require.NoError(t, err)
		take(t, l, 2)
		require.NoError(t, l.SetMax(1)) // waits for a slot back
		got := make(chan int, 2)
		for i := range 2 {
			go func() {
				if l.Acquire(context.Background()) == nil {
					got <- i
				}
			}()
			synctest.Wait()
		}
		require.NoError(t, l.SetMax(4)) // two more than the two in flight
		synctest.Wait()
		assert.ElementsMatch(t, []int{0, 1}, []int{<-got, <-got}, "both waiters get the new slots")
		assert.Equal(t, 4, l.InFlight())
		assert.False(t, l.TryAcquire())
		for range 4 {
			l.Release()
		}
	})
}

// Bad input changes nothing; each layer with an Observer sees the change.
func TestLimiter_LM12_SetMaxErrorsAndEvents(t *testing.T) {
	l, err := concurrency.New(2)
	require.NoError(t, err)
	assert.EqualError(t, l.SetMax(0), "concurrency: max must be >= 1, got 0")
	assert.Equal(t, 2, l.Max())
	var zero concurrency.Limiter
	assert.EqualError(t, zero.SetMax(1), "concurrency: SetMax of a zero Limiter: make it with New")

	var rec observetest.Recorder
	_, err = concurrency.NewLayer[int, int](concurrency.Config{Limiter: l, Name: "db", Observer: &rec})
	require.NoError(t, err)
	require.NoError(t, l.SetMax(5))
	assert.Equal(t, []observe.Event{{Source: observe.Concurrency, Name: "db", Kind: observe.Tuned}}, rec.Events())
}

// SetMax of a nil *Limiter is an error, not a panic.
func TestLimiter_LM12_SetMaxNilLimiter(t *testing.T) {
	var l *concurrency.Limiter
	assert.EqualError(t, l.SetMax(1), "concurrency: SetMax of a nil *Limiter")
}

// SetMax while calls flow through a layer (run with -race): every call
// ends, and no slot is lost.
func TestLimiter_LM12_SetMaxWhileCallsFlow(t *testing.T) {
	l, err := concurrency.New(2)
	require.NoError(t, err)
	layer, err := concurrency.NewLayer[int, int](concurrency.Config{Limiter: l})
	require.NoError(t, err)
	svc := layer.Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, nil }))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 300 {
				if i == 0 {
					require.NoError(t, l.SetMax(1+j%5))
					continue
				}
				_, err := svc.Call(context.Background(), 0)
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
	require.NoError(t, l.SetMax(3))
	assert.Equal(t, 0, l.InFlight())
	take(t, l, 3)
	assert.False(t, l.TryAcquire(), "exactly the last Max")
}

func TestNew_RejectsBadMax(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		want string
	}{
		{name: "zero", max: 0, want: "concurrency: max must be >= 1, got 0"},
		{name: "negative", max: -3, want: "concurrency: max must be >= 1, got -3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := concurrency.New(tc.max)
			assert.Nil(t, l)
			assert.EqualError(t, err, tc.want)
		})
	}
}

// The zero Limiter has no slots and is never ready: Acquire refuses at
// once, saying no slot will ever free; TryAcquire fails; Release is
// ignored. None panics.
func TestLimiter_LM4_ZeroValue(t *testing.T) {
	var l concurrency.Limiter
	assert.Zero(t, l.Max())
	assert.Zero(t, l.InFlight())
	assert.False(t, l.Ready())

	err := l.Acquire(t.Context())
	require.ErrorIs(t, err, concurrency.ErrLimited)
	var le *concurrency.LimitedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, time.Duration(math.MaxInt64), le.RetryAfter())
	assert.EqualError(t, err, "concurrency: limit reached: the limiter has no slots (a nil or zero Limiter or AdaptiveLimiter; make one with New or NewAdaptive)")
	assert.False(t, l.TryAcquire())
	l.Release()
	assert.Zero(t, l.InFlight())
}

// TestLimiter_NZ1_NilLimiter calls every exported method of a nil
// *Limiter: it has no slots, as the zero Limiter, and nothing panics.
func TestLimiter_NZ1_NilLimiter(t *testing.T) {
	var l *concurrency.Limiter
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Max", Call: func() any { return l.Max() }, Want: 0},
		{Name: "InFlight", Call: func() any { return l.InFlight() }, Want: 0},
		{Name: "Ready", Call: func() any { return l.Ready() }, Want: false},
		{Name: "ReadyFor", Call: func() any { return l.ReadyFor(rampart.WithCriticality(t.Context(), rampart.Critical)) }, Want: false},
		{Name: "Acquire", Call: func() any {
			err := l.Acquire(t.Context())
			wait, hinted := rampart.RetryAfter(err)
			return []any{err.Error(), errors.Is(err, concurrency.ErrLimited), wait, hinted}
		}, Want: []any{"concurrency: limit reached: the limiter has no slots (a nil or zero Limiter or AdaptiveLimiter; make one with New or NewAdaptive)", true, rampart.Forever, true}},
		{Name: "TryAcquire", Call: func() any { return l.TryAcquire() }, Want: false},
		{Name: "Release", Call: func() any { l.Release(); return l.InFlight() }, Want: 0},
		{Name: "SetMax", Call: func() any { return l.SetMax(2).Error() }, Want: "concurrency: SetMax of a nil *Limiter"},
	})
}
