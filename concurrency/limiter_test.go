package concurrency_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/concurrency"
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
	assert.EqualError(t, err, "concurrency: limit reached: the limiter has no slots (a zero Limiter or AdaptiveLimiter; make one with New or NewAdaptive)")
	assert.False(t, l.TryAcquire())
	l.Release()
	assert.Zero(t, l.InFlight())
}
