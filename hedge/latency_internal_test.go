package hedge

import (
	"cmp"
	"slices"
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
			l.record(time.Duration(i)*time.Millisecond, false)
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
		l.record(time.Millisecond, false)
	}
	// 79 recordings: the last boundary, at 76, still saw 13..16ms.
	assert.Equal(t, 16*time.Millisecond, l.current())
	l.record(time.Millisecond, false)
	// 80: a boundary, and the window is recordings 17 to 80, all 1ms.
	assert.Equal(t, time.Millisecond, l.current())
}

func TestLatencies_RecordDoesNotAllocate(t *testing.T) {
	l := newLatencies(0.95, 256, 32, time.Second)
	allocs := testing.AllocsPerRun(1000, func() { l.record(time.Millisecond, false) })
	assert.Zero(t, allocs)
}

// FuzzLatencies checks the ring against a plain model: after every
// recording, the delay is the nearest-rank percentile of the last Window
// latencies as of the latest recompute boundary, or the fallback before
// MinSamples. A censored latency (an odd byte) ranks above every complete
// one, and the delay it gives is its lower bound.
func FuzzLatencies(f *testing.F) {
	f.Add([]byte{5, 1, 9, 200, 3, 3, 7, 0, 255, 12, 40, 41, 42}, uint8(4), uint8(2), uint8(95))
	f.Add([]byte{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40}, uint8(40), uint8(20), uint8(50))
	f.Add([]byte{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 3, 5}, uint8(19), uint8(19), uint8(94))
	f.Fuzz(func(t *testing.T, data []byte, window, minSamples, percent uint8) {
		w := int(window%64) + 1
		m := int(minSamples)%w + 1
		p := float64(percent%100+1) / 100
		l := newLatencies(p, w, m, time.Hour)
		type sample struct {
			d        time.Duration
			censored bool
		}
		var all []sample
		want := time.Hour
		for i, b := range data {
			s := sample{d: time.Duration(b>>1) * time.Millisecond, censored: b&1 == 1}
			l.record(s.d, s.censored)
			all = append(all, s)
			if n := i + 1; n >= m && (n-m)%max(1, w/16) == 0 {
				win := slices.Clone(all[max(0, n-w):])
				slices.SortFunc(win, func(a, b sample) int {
					if a.censored != b.censored {
						if a.censored {
							return 1
						}
						return -1
					}
					return cmp.Compare(a.d, b.d)
				})
				want = win[nearestRank(p, len(win))-1].d
			}
			if got := l.current(); got != want {
				t.Fatalf("after %d recordings (window %d, min %d, p %v): delay %v, want %v", i+1, w, m, p, got, want)
			}
		}
	})
}
