package hedge

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// latencies keeps the last len(ring) successful attempt latencies and the
// hedge delay learned from them. Recording is lock-free: an atomic counter
// picks the slot and an atomic store fills it. Every few recordings one
// recorder sorts a copy of the ring to find the percentile and publishes it
// in delay, which every call reads with one atomic load.
type latencies struct {
	p          float64
	minSamples uint64
	every      uint64 // recompute after this many recordings
	n          atomic.Uint64
	ring       []atomic.Int64 // nanoseconds; slot (i-1) % len holds recording i
	delay      atomic.Int64   // nanoseconds; the fallback until MinSamples

	mu      sync.Mutex // held only while recomputing
	scratch []int64    // guarded by mu
}

func newLatencies(p float64, window, minSamples int, fallback time.Duration) *latencies {
	l := &latencies{
		p:          p,
		minSamples: uint64(minSamples),
		every:      uint64(max(1, window/16)),
		ring:       make([]atomic.Int64, window),
		scratch:    make([]int64, window),
	}
	l.delay.Store(int64(fallback))
	return l
}

// current returns the delay to use now.
func (l *latencies) current() time.Duration {
	return time.Duration(l.delay.Load())
}

// slower marks a sample that is only a lower bound: an attempt cancelled
// after running d is recorded as d|slower, which sorts above every
// complete latency (they are below 2^62ns, 146 years) and, among the
// marked samples, by d.
const slower = 1 << 62

// record adds one latency and, on a recompute boundary, learns a new
// delay. A censored latency is a lower bound: see [slower].
func (l *latencies) record(d time.Duration, censored bool) {
	v := int64(d)
	if censored {
		v |= slower
	}
	n := l.n.Add(1)
	l.ring[(n-1)%uint64(len(l.ring))].Store(v)
	if n < l.minSamples || (n-l.minSamples)%l.every != 0 {
		return
	}
	// A recorder that finds another one recomputing skips its turn; the
	// next boundary catches up, so recording never waits for a lock.
	if !l.mu.TryLock() {
		return
	}
	defer l.mu.Unlock()
	// A slot claimed by a concurrent recorder but not yet stored holds its
	// previous value (or zero before the ring is full); each such stale
	// sample moves the percentile by at most one rank, until the next
	// recompute.
	s := l.scratch[:min(n, uint64(len(l.ring)))]
	for i := range s {
		s[i] = l.ring[i].Load()
	}
	slices.Sort(s)
	l.delay.Store(s[nearestRank(l.p, len(s))-1] &^ slower)
}

// nearestRank returns the 1-based rank of the p-quantile of n sorted
// values: the smallest rank r with r/n >= p. The small epsilon keeps a
// product such as 0.95*20, which floating point may compute as
// 19.000000000000004, from rounding up to the next rank.
func nearestRank(p float64, n int) int {
	r := int(math.Ceil(p*float64(n) - 1e-9))
	return min(max(r, 1), n)
}
