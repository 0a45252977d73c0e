package concurrency

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call timed in one window and released while another Release closes
// that window counts, duration and all, in one window only: the next
// window's average is the mean of its own calls' durations, 10ms here,
// never below the shortest call. Before, the closing window could take the
// call's duration and the next window its count, so that window averaged
// 10 calls' worth of latency over 11 calls and taught a 9ms baseline.
func TestAdaptive_LM11_ReleaseDuringWindowCloseCountsInOneWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const call = 10 * time.Millisecond
		lim, err := NewAdaptive(AdaptiveConfig{Window: 100 * time.Millisecond})
		require.NoError(t, err)
		acquire := func(n int) []Permit {
			ps := make([]Permit, n)
			for i := range ps {
				p, ok := lim.TryAcquire()
				require.True(t, ok)
				ps[i] = p
			}
			return ps
		}
		// Window 0: 9 calls of 10ms, and two long calls X and Y that
		// start with them and end as the window may close.
		short := acquire(9)
		long := acquire(2)
		time.Sleep(call)
		for _, p := range short {
			lim.Release(p)
		}
		time.Sleep(100*time.Millisecond - call)
		// X's Release is under way when Y's closes window 0.
		testHookRecorded = func() {
			testHookRecorded = nil
			lim.Release(long[1])
		}
		t.Cleanup(func() { testHookRecorded = nil })
		lim.Release(long[0])
		require.Nil(t, testHookRecorded, "the hook did not run")
		first := lim.Baseline()
		assert.Greater(t, first, call, "window 0 closed with the long calls")

		// Window 1: 10 calls of exactly 10ms, ending when it may close.
		time.Sleep(100*time.Millisecond - call)
		short = acquire(10)
		time.Sleep(call)
		for _, p := range short {
			lim.Release(p)
		}
		assert.Equal(t, call, lim.Baseline(), "window 1's average")
	})
}

// A window holds at most maxSamples calls and maxLatency nanoseconds of
// summed latency: a call that would exceed either is left out whole, its
// count with its latency, rather than wrapping into the other.
func TestAdaptive_LM11_CallBeyondWindowSumsIsLeftOut(t *testing.T) {
	lim, err := NewAdaptive(AdaptiveConfig{})
	require.NoError(t, err)

	assert.Equal(t, int64(1), lim.record(maxLatency))
	assert.Equal(t, int64(1), lim.record(1), "latency sum full")
	assert.Equal(t, uint64(maxLatency)<<sampleBits+1, lim.sums.Load())

	lim.sums.Store(maxSamples)
	assert.Equal(t, int64(maxSamples), lim.record(1), "count full")
	assert.Equal(t, uint64(maxSamples), lim.sums.Load())
}
