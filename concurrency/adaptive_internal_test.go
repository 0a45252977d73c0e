package concurrency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call's latency and its count are one word, added by one
// compare-and-swap and taken by the window's one swap, so no window can
// hold one without the other: whichever side of a window's close a call's
// Release falls on, it counts wholly there. (Before, two adds and two
// swaps let a concurrent close split them, and a window averaged 10 calls'
// latency over 11 calls, teaching a baseline below every real call.)
func TestAdaptive_LM11_CountAndLatencyMoveTogether(t *testing.T) {
	lim, err := NewAdaptive(AdaptiveConfig{})
	require.NoError(t, err)
	const call = uint64(10 * time.Millisecond)
	for range 3 {
		lim.record(call)
	}
	closed := lim.sums.Swap(0) // what closeWindow takes
	assert.Equal(t, int64(3), sampleCount(closed))
	assert.Equal(t, 3*call, closed>>sampleBits)
	lim.record(call) // a Release after the close counts in the next window only
	assert.Equal(t, call<<sampleBits+1, lim.sums.Load())
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
