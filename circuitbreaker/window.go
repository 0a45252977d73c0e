package circuitbreaker

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/rampart-go/rampart/clock"
)

// Window is the stretch of recent calls a rate policy looks at: the last
// Size calls (resilience4j's count-based window), or the last Period in
// Buckets rolling buckets (Hystrix's rolling window).
type Window struct {
	// Size is the number of most recent calls in a count window. Zero
	// means 100; at most 1,000,000. It must be zero when Period is set.
	Size int
	// Period > 0 makes it a time window that long; negative is an error.
	Period time.Duration
	// Buckets is the number of buckets of a time window. Zero means 10; at
	// most 1,000, and at most Period in nanoseconds. It needs Period.
	Buckets int
	// MinCalls is how many calls must be held before the rate is judged:
	// zero means Size, or 20 for a time window (Hystrix's); at most Size.
	MinCalls int
}

const (
	defaultWindowSize    = 100
	defaultBuckets       = 10
	defaultTimedMinCalls = 20
	maxBuckets           = 1000
)

// flags of one recorded call.
const (
	flagFailure uint8 = 1 << iota
	flagSlow
)

// window counts calls, failures and slow calls over a count or time window.
// It is not safe for concurrent use: trackers use it under the breaker's
// lock.
type window struct {
	minCalls int

	// calls, failures and slow are the totals of the window: of the ring,
	// or of the buckets numbered head-len(buckets)+1 to head. They are kept
	// up to date as calls enter and leave, so that judging the window costs
	// nothing.
	calls, failures, slow int

	// Count window: a ring of the last len(ring) calls' flags.
	ring    []uint8
	next, n int

	// Time window: rolling buckets of width nanoseconds. The bucket
	// numbered k (the k-th width-long interval of the monotonic clock) lives at
	// buckets[k%len(buckets)]; a slot whose idx is not in the window holds
	// nothing that the totals count. head is the newest bucket number the
	// window has reached.
	buckets []bucket
	width   int64
	head    int64
	// now reads the monotonic clock the calls' Call.Monotonic come from,
	// for Counts: the breaker's (useClock), or, for a tracker used on
	// its own, the time since base.
	now  func() time.Duration
	base time.Time
}

// useClock puts the window on the breaker's clock (see [ClockUser]).
func (w *window) useClock(c clock.Clock) {
	w.now = c.Monotonic
}

// mono reads the window's monotonic clock.
func (w *window) mono() time.Duration {
	if w.now != nil {
		return w.now()
	}
	return time.Since(w.base)
}

type bucket struct {
	idx                   int64 // the bucket number, math.MinInt64 when empty
	calls, failures, slow int
}

// newWindow validates w (named field in errors) and builds its state.
func newWindow(field string, w Window) (*window, error) {
	switch {
	case w.Period < 0:
		return nil, fmt.Errorf("circuitbreaker: %s.Period must be >= 0, got %s", field, durationString(w.Period))
	case w.Period > 0 && w.Size != 0:
		return nil, fmt.Errorf("circuitbreaker: %s.Size must be 0 with a Period, got %d", field, w.Size)
	case w.Period == 0 && w.Buckets != 0:
		return nil, fmt.Errorf("circuitbreaker: %s.Buckets needs a Period, got %d buckets without one", field, w.Buckets)
	case w.Buckets < 0 || w.Buckets > maxBuckets:
		return nil, fmt.Errorf("circuitbreaker: %s.Buckets must be in [0, %d], got %d", field, maxBuckets, w.Buckets)
	}
	if err := checkCount(field+".Size", w.Size); err != nil {
		return nil, err
	}
	if err := checkCount(field+".MinCalls", w.MinCalls); err != nil {
		return nil, err
	}
	if w.Period == 0 {
		size := cmp.Or(w.Size, defaultWindowSize)
		if w.MinCalls > size {
			return nil, fmt.Errorf("circuitbreaker: %s.MinCalls must be <= Size (%d), got %d", field, size, w.MinCalls)
		}
		return &window{minCalls: cmp.Or(w.MinCalls, size), ring: make([]uint8, size)}, nil
	}
	n := cmp.Or(w.Buckets, defaultBuckets)
	width := int64(w.Period) / int64(n)
	if width == 0 {
		return nil, fmt.Errorf("circuitbreaker: %s.Period must be at least Buckets (%d) nanoseconds, got %s", field, n, durationString(w.Period))
	}
	win := &window{
		minCalls: cmp.Or(w.MinCalls, defaultTimedMinCalls),
		buckets:  make([]bucket, n),
		width:    width,
		base:     time.Now(),
	}
	win.reset()
	return win, nil
}

// timed reports whether this is a time window, which needs
// Call.Monotonic.
func (w *window) timed() bool { return w.buckets != nil }

// add records one call with flags at now (ignored by a count window). In a
// time window it costs O(1), amortised over the buckets the window moves
// through; a call whose bucket has already left the window (its clock was
// read before a concurrent call moved the window on by a whole Period) is
// not counted.
func (w *window) add(now time.Duration, flags uint8) {
	failures, slow := int(flags&flagFailure), int(flags&flagSlow)>>1
	if w.timed() {
		w.addAt(w.index(now), 1, failures, slow)
		return
	}
	if w.n == len(w.ring) {
		old := w.ring[w.next]
		w.calls--
		w.failures -= int(old & flagFailure)
		w.slow -= int(old&flagSlow) >> 1
	} else {
		w.n++
	}
	w.ring[w.next] = flags
	w.next = (w.next + 1) % len(w.ring)
	w.calls++
	w.failures += failures
	w.slow += slow
}

// addAt records calls calls, of which failures failed and slow were slow,
// in bucket number idx of a time window, moving the window on to idx
// first; calls whose bucket has left the window are not counted.
func (w *window) addAt(idx int64, calls, failures, slow int) {
	w.advance(idx)
	if idx <= w.head-int64(len(w.buckets)) {
		return
	}
	b := &w.buckets[idx%int64(len(w.buckets))]
	if b.idx != idx {
		*b = bucket{idx: idx} // not in the window: nothing counted
	}
	b.calls += calls
	b.failures += failures
	b.slow += slow
	w.calls += calls
	w.failures += failures
	w.slow += slow
}

// advance moves a time window on to bucket number idx, if it is newer than
// head: the buckets that leave the window leave the totals, and each slot
// passed over is emptied for its new bucket. It touches at most
// len(buckets) slots, each once per Period of time.
func (w *window) advance(idx int64) {
	if idx <= w.head {
		return
	}
	n := int64(len(w.buckets))
	for k := max(w.head+1, idx-n+1); k <= idx; k++ {
		b := &w.buckets[k%n]
		if b.idx > w.head-n { // in the window until now
			w.calls -= b.calls
			w.failures -= b.failures
			w.slow -= b.slow
		}
		*b = bucket{idx: k}
	}
	w.head = idx
}

// clean reports whether w is a full count window of calls that neither
// failed nor were slow: adding such a call to it changes nothing.
func (w *window) clean() bool {
	return !w.timed() && w.n == len(w.ring) && w.failures == 0 && w.slow == 0
}

// index returns the number of the bucket interval that holds now.
func (w *window) index(now time.Duration) int64 {
	return max(0, int64(now)) / w.width
}

// totals returns the counts in the window at now, first moving a time
// window on to now.
func (w *window) totals(now time.Duration) Counts {
	if w.timed() {
		w.advance(w.index(now))
	}
	return w.counters()
}

// counters returns the totals as of the window's head, without moving it.
func (w *window) counters() Counts {
	return Counts{Calls: w.calls, Failures: w.failures, SlowCalls: w.slow}
}

// reset forgets every call. A time window keeps its head: every slot is
// emptied, so none is counted when it leaves.
func (w *window) reset() {
	clear(w.ring)
	w.next, w.n, w.calls, w.failures, w.slow = 0, 0, 0, 0, 0
	for i := range w.buckets {
		w.buckets[i] = bucket{idx: math.MinInt64}
	}
}

// checkRatio validates a ratio field, which must be in (0, 1]; zero selects
// def.
func checkRatio(field string, r, def float64) (float64, error) {
	if r == 0 {
		return def, nil
	}
	if !(r > 0 && r <= 1) {
		return 0, fmt.Errorf("circuitbreaker: %s must be in (0, 1], got %v", field, r)
	}
	return r, nil
}

// reached reports whether hits out of calls reaches ratio. Comparing the
// quotient, not hits against ratio·calls, keeps 3 of 10 at a ratio of 0.3
// exact: both sides round to the same float64.
func reached(hits, calls int, ratio float64) bool {
	return calls > 0 && float64(hits)/float64(calls) >= ratio
}

// judge decides a run of n probes of which hits count toward ratio and
// misses do not, as early as the outcome is certain: hit reports that
// hits/n reaches ratio however the remaining probes end, miss that it
// cannot reach it any more. Once n probes are judged one of them is true.
func judge(hits, misses, n int, ratio float64) (hit, miss bool) {
	k := minHits(n, ratio)
	return hits >= k, misses > n-k
}

// minHits returns the smallest k in [1, n] with k/n >= ratio, for ratio in
// (0, 1].
func minHits(n int, ratio float64) int {
	k := max(1, min(n, int(math.Ceil(ratio*float64(n)))))
	for k > 1 && reached(k-1, n, ratio) {
		k--
	}
	for k < n && !reached(k, n, ratio) {
		k++
	}
	return k
}
