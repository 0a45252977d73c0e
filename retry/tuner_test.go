package retry_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/retry"
)

// failing returns a service that always fails and counts its calls.
func failing(calls *atomic.Int64) rampart.Service[string, string] {
	return rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		calls.Add(1)
		return "", errors.New("down")
	})
}

// A Tune changes the attempts and backoff of the calls whose first attempt
// fails after it; a call already retrying keeps the settings it started
// with; each layer's Observer is told.
func TestTuner_RT15_ChangeWhileCallsFlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tu, err := retry.NewTuner(retry.Settings{MaxAttempts: 3, Backoff: constant(t, 10*time.Second)})
		require.NoError(t, err)
		var rec observetest.Recorder
		var calls atomic.Int64
		s := wrapT(t, failing(&calls), retry.Config[string, string]{Tuner: tu, Budget: budget.Always, Name: "r", Observer: &rec})

		start := time.Now()
		done := make(chan time.Duration)
		go func() {
			_, _ = s.Call(context.Background(), "x")
			done <- time.Since(start)
		}()
		time.Sleep(5 * time.Second) // the first call waits for its second attempt
		require.NoError(t, tu.Tune(retry.Settings{MaxAttempts: 2, Backoff: constant(t, time.Second)}))
		assert.Equal(t, 20*time.Second, <-done, "three attempts, 10s apart: the settings it started with")
		assert.Equal(t, int64(3), calls.Load())

		calls.Store(0)
		start = time.Now()
		_, err = s.Call(context.Background(), "x")
		var ex *retry.ExhaustedError
		require.ErrorAs(t, err, &ex)
		assert.Equal(t, 2, ex.Attempts)
		assert.Equal(t, time.Second, time.Since(start), "the new backoff")
		assert.Equal(t, int64(2), calls.Load())

		var tuned []observe.Event
		for _, e := range rec.Events() {
			if e.Kind == observe.Tuned {
				tuned = append(tuned, e)
			}
		}
		require.Len(t, tuned, 1)
		assert.Equal(t, observe.Event{Source: observe.Retry, Name: "r", Kind: observe.Tuned, Attempt: 2}, tuned[0])
		assert.Equal(t, 2, tu.Settings().MaxAttempts)
	})
}

// Retryable is asked about each first outcome before the settings are
// read, so it is asked even when MaxAttempts 1 leaves no retry: once per
// call, the outcome returned as the inner service gave it whatever it
// answers.
func TestTuner_RT15_RetryableAskedWithOneAttempt(t *testing.T) {
	tu, err := retry.NewTuner(retry.Settings{MaxAttempts: 1})
	require.NoError(t, err)
	var asked, calls atomic.Int64
	s := wrapT(t, failing(&calls), retry.Config[string, string]{Tuner: tu, Budget: budget.Always,
		Retryable: func(string, error) bool { return asked.Add(1)%2 == 1 }})
	for range 4 {
		_, err := s.Call(context.Background(), "x")
		require.EqualError(t, err, "down")
	}
	assert.Equal(t, int64(4), calls.Load())
	assert.Equal(t, int64(4), asked.Load())
}

// Bad settings are NewLayer's errors and change nothing; a Config with a
// Tuner holds no attempts or backoff of its own; the zero Tuner holds the
// defaults.
func TestTuner_RT15_BadSettings(t *testing.T) {
	_, err := retry.NewTuner(retry.Settings{MaxAttempts: 101})
	assert.EqualError(t, err, "retry: MaxAttempts must be 0 (the default, 3) or between 1 and 100, got 101")
	tu, err := retry.NewTuner(retry.Settings{MaxAttempts: 4})
	require.NoError(t, err)
	assert.EqualError(t, tu.Tune(retry.Settings{Backoff: retry.BackoffFunc(nil)}), "retry: Backoff must not be a nil func or pointer, got retry.BackoffFunc(nil)")
	assert.Equal(t, 4, tu.Settings().MaxAttempts, "unchanged")
	_, err = retry.NewLayer(retry.Config[string, string]{Tuner: tu, MaxAttempts: 2})
	assert.EqualError(t, err, "retry: MaxAttempts and Backoff must be zero with a Tuner, which holds them; got MaxAttempts 2, Backoff <nil>")

	var zero retry.Tuner
	assert.Equal(t, retry.DefaultMaxAttempts, zero.Settings().MaxAttempts)
	var calls atomic.Int64
	s := wrapT(t, failing(&calls), retry.Config[string, string]{Tuner: &zero, Budget: budget.Always, Backoff: nil})
	synctest.Test(t, func(t *testing.T) {
		_, _ = s.Call(context.Background(), "x")
	})
	assert.Equal(t, int64(retry.DefaultMaxAttempts), calls.Load())
}

// Tune of a nil *Tuner is an error, not a panic.
func TestTuner_RT15_NilTuner(t *testing.T) {
	var tu *retry.Tuner
	assert.EqualError(t, tu.Tune(retry.Settings{}), "retry: Tune of a nil *Tuner")
	assert.Equal(t, retry.DefaultMaxAttempts, tu.Settings().MaxAttempts, "a nil Tuner's Settings are the defaults")
	assert.NotNil(t, tu.Settings().Backoff, "the default backoff")
}

// Tune is safe while calls retry (run with -race): each call makes 1 to
// 4 attempts, and the last Tune holds afterwards.
func TestTuner_RT15_Race(t *testing.T) {
	tu, err := retry.NewTuner(retry.Settings{MaxAttempts: 2, Backoff: constant(t, 0)})
	require.NoError(t, err)
	var calls atomic.Int64
	s := wrapT(t, failing(&calls), retry.Config[string, string]{Tuner: tu, Budget: budget.Always, Observer: observe.Func(func(context.Context, observe.Event) {})})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 200 {
				if i == 0 {
					require.NoError(t, tu.Tune(retry.Settings{MaxAttempts: 1 + j%4, Backoff: constant(t, 0)}))
					continue
				}
				_, _ = s.Call(context.Background(), "x")
			}
		})
	}
	wg.Wait()
	n := calls.Load()
	assert.True(t, n >= 600 && n <= 600*4, "600 calls of 1 to 4 attempts each, got %d attempts", n)
	calls.Store(0)
	_, err = s.Call(context.Background(), "x")
	require.Error(t, err)
	assert.Equal(t, int64(4), calls.Load(), "a call after the race makes the last Tune's MaxAttempts (1+199%4)")
}

// A layer built with a Tuner succeeds without allocating, as one without.
func TestTuner_RT15_SuccessAllocatesNothing(t *testing.T) {
	tu, err := retry.NewTuner(retry.Settings{})
	require.NoError(t, err)
	ok := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })
	s := wrapT(t, ok, retry.Config[string, string]{Tuner: tu, Budget: budget.Always,
		Retryable: func(_ string, err error) bool { return err != nil }})
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = s.Call(ctx, "x") }))
}

// Concurrent Tunes are told in the order they took effect: each layer's
// last event has the MaxAttempts the Tuner holds.
func TestTuner_RT15_EventsInTheOrderOfTheChanges(t *testing.T) {
	tu, err := retry.NewTuner(retry.Settings{})
	require.NoError(t, err)
	first, release := make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	_, err = retry.NewLayer(retry.Config[string, string]{Tuner: tu, Observer: observe.Func(func(context.Context, observe.Event) {
		if n.Add(1) == 1 {
			close(first)
			<-release // the first change is being told, to this layer first
		}
	})})
	require.NoError(t, err)
	var mu sync.Mutex
	var told []int
	_, err = retry.NewLayer(retry.Config[string, string]{Tuner: tu, Observer: observe.Func(func(_ context.Context, e observe.Event) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, e.Attempt)
	})})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, tu.Tune(retry.Settings{MaxAttempts: 2})) })
	<-first
	wg.Go(func() { assert.NoError(t, tu.Tune(retry.Settings{MaxAttempts: 5})) })
	time.Sleep(50 * time.Millisecond) // room for the second to overtake the first
	close(release)
	wg.Wait()
	assert.Equal(t, []int{2, 5}, told)
	assert.Equal(t, 5, tu.Settings().MaxAttempts)
}
