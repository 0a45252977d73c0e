package hedge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNearestRank(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		n    int
		want int
	}{
		{p: 0.95, n: 20, want: 19},
		{p: 0.95, n: 100, want: 95},
		{p: 0.95, n: 1, want: 1},
		{p: 0.5, n: 4, want: 2},
		{p: 0.5, n: 5, want: 3},
		{p: 0.99, n: 256, want: 254},
		{p: 1, n: 7, want: 7},
		{p: 0.001, n: 7, want: 1},
		{p: 0.1, n: 10, want: 1},
		{p: 0.7, n: 10, want: 7},
	} {
		assert.Equal(t, tc.want, nearestRank(tc.p, tc.n), "p=%v n=%d", tc.p, tc.n)
	}
}

// With a window of 64 the percentile is recomputed at MinSamples and then
// every 64/16 = 4 recordings, and reflects only the last 64 latencies.
func TestLatencies_RecomputeBoundariesAndWindow(t *testing.T) {
	l := newLatencies(1, 64, 8, time.Second)
	record := func(from, to int) {
		for i := from; i <= to; i++ {
			l.record(time.Duration(i) * time.Millisecond)
		}
	}
	record(1, 7)
	assert.Equal(t, time.Second, l.current(), "fallback before MinSamples")
	record(8, 8)
	assert.Equal(t, 8*time.Millisecond, l.current(), "first computed at MinSamples")
	record(9, 11)
	assert.Equal(t, 8*time.Millisecond, l.current(), "not recomputed between boundaries")
	record(12, 12)
	assert.Equal(t, 12*time.Millisecond, l.current(), "recomputed 4 recordings later")

	// Fill the ring with small values: the large ones leave the window.
	record(13, 16)
	assert.Equal(t, 16*time.Millisecond, l.current(), "16 recordings, a boundary")
	for range 63 {
		l.record(time.Millisecond)
	}
	// 79 recordings: the last boundary, at 76, still saw 13..16ms.
	assert.Equal(t, 16*time.Millisecond, l.current())
	l.record(time.Millisecond)
	// 80: a boundary, and the window is recordings 17 to 80, all 1ms.
	assert.Equal(t, time.Millisecond, l.current())
}

func TestLatencies_RecordDoesNotAllocate(t *testing.T) {
	l := newLatencies(0.95, 256, 32, time.Second)
	allocs := testing.AllocsPerRun(1000, func() { l.record(time.Millisecond) })
	assert.Zero(t, allocs)
}
