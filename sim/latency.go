package sim

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

// maxLatencyKeys bounds the distinct latencies a [latencies] holds.
const maxLatencyKeys = 4096

// latencies counts the latencies callers felt, in bounded memory: each
// latency exactly while at most maxLatencyKeys distinct values have been
// seen, and beyond that truncated to fewer significant bits, one fewer
// each time the distinct values would exceed the bound (the maximum is
// kept exactly). So quantiles are exact for most traces, and otherwise
// low by less than 2^-(keep-1) of their value: keep never falls below 7
// bits (under 1.6%), since the values of 7 significant bits of all 63
// lengths are 4096, and is usually far higher.
type latencies struct {
	counts map[time.Duration]int
	n      int
	max    time.Duration
	keep   int // significant bits kept of each value; 0 keeps all
}

// add counts one latency d.
func (l *latencies) add(d time.Duration) {
	if l.counts == nil {
		l.counts = make(map[time.Duration]int)
	}
	d = max(d, 0)
	l.n++
	l.max = max(l.max, d)
	l.counts[l.round(d)]++
	for len(l.counts) > maxLatencyKeys {
		if l.keep == 0 {
			l.keep = bits.Len64(uint64(l.max))
		}
		l.keep--
		old := l.counts
		l.counts = make(map[time.Duration]int, len(old))
		for k, c := range old {
			l.counts[l.round(k)] += c
		}
	}
}

// round truncates d to the significant bits kept.
func (l *latencies) round(d time.Duration) time.Duration {
	lead := bits.Len64(uint64(d))
	if l.keep == 0 || lead <= l.keep {
		return d
	}
	shift := uint(lead - l.keep)
	return d >> shift << shift
}

// quantiles returns, for each q, the latency at or below which a q share
// of the latencies lie (nearest rank: the ceil(q·n)-th smallest), or zero
// when there are none.
func (l *latencies) quantiles(qs ...float64) []time.Duration {
	out := make([]time.Duration, len(qs))
	if l.n == 0 {
		return out
	}
	keys := make([]time.Duration, 0, len(l.counts))
	for k := range l.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, q := range qs {
		rank := int(math.Ceil(q*float64(l.n) - 1e-9))
		rank = min(max(rank, 1), l.n)
		seen := 0
		for _, k := range keys {
			seen += l.counts[k]
			if seen >= rank {
				out[i] = k
				break
			}
		}
	}
	return out
}
