package circuitbreaker

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rampart-go/rampart/clock"
)

// fastWindow is the time window of a FailureRate with a lock-free success
// path: a success that cannot trip the breaker is counted with one
// compare-and-swap on a striped counter, without the breaker's lock and
// without a clock read. Failures, and successes whenever the fast path is
// closed, take the locks and read the clock as before, and every such
// locked outcome first folds the striped counts into the buckets, so the
// window is exact whenever it is judged.
//
// The fast path needs to know the current bucket without reading the
// clock. A runtime timer tells it: the fast path is open only in the
// "cached" phase, from a bucket's start (plus lead) until lead before its
// end; a timer closes it lead before each bucket boundary ("near") and
// another reopens it lead after the boundary, with the next bucket. Within
// synctest the timers run strictly before and after the boundary, so an
// outcome at the boundary itself reads the clock: the window stays exact.
// With the window empty the timers stop ("idle") until the next locked
// outcome.
//
// A success counted on the fast path carries the stamp of the phase it
// saw; the fold credits it to that phase's bucket, or drops it when a
// Reset came in between.
type fastWindow struct {
	// tick is stamp<<1 | open. Read by every success; written with mu
	// held, at most a few times per bucket. Alone on its cache line.
	_    [cacheLine]byte
	tick atomic.Uint64
	_    [cacheLine - 8]byte

	stripes []stripe
	mask    uint64 // len(stripes)-1

	mu sync.Mutex
	// w is the window; guarded by mu (the tracker's methods, called under
	// the breaker's lock, take mu too; the timers take only mu).
	w        *window
	minCalls int
	ratio    float64
	lead     time.Duration // how long before and after a boundary the fast path is closed; 0: always closed
	phase    phase         // guarded by mu
	stamp    uint64        // guarded by mu: the current stamp
	// stamps maps recent stamps to their bucket (guarded by mu), so that a
	// success counted under an older stamp is credited to its own bucket.
	stamps [16]stamped
	gen    uint64      // guarded by mu: bumped to disown a timer
	timer  clock.Timer // guarded by mu: the pending timer, if any
	now    func() time.Duration
	after  func(time.Duration, func()) clock.Timer
}

type phase uint8

const (
	phaseIdle   phase = iota // no timer; the fast path is closed
	phaseCached              // the fast path may count into the stamp's bucket
	phaseNear                // around a boundary: closed until the next bucket starts
)

// stamped is a stamp and the bucket its successes belong to.
type stamped struct {
	stamp uint64
	idx   int64
	valid bool
}

// A stripe word is stamp<<countBits | count.
const (
	countBits = 40
	countMask = 1<<countBits - 1
	stampMask = 1<<(64-countBits-1) - 1 // leaves tick's open bit free
)

// stripe is a counter of successes alone on its cache line (128 bytes
// also keeps the adjacent-line prefetcher from pairing two).
type stripe struct {
	n atomic.Uint64
	_ [2*cacheLine - 8]byte
}

func newFastWindow(w *window, minCalls int, ratio float64) *fastWindow {
	n := 1
	for n < 64 && n < 4*runtime.GOMAXPROCS(0) {
		n *= 2
	}
	start := time.Now()
	return &fastWindow{
		w:        w,
		minCalls: minCalls,
		ratio:    ratio,
		lead:     min(time.Duration(w.width)/64, 10*time.Millisecond),
		stripes:  make([]stripe, n),
		mask:     uint64(n - 1),
		now:      func() time.Duration { return time.Since(start) },
		after:    func(d time.Duration, f func()) clock.Timer { return time.AfterFunc(d, f) },
	}
}

// count counts a success without a lock if the fast path is open, and
// reports whether it did.
func (f *fastWindow) count() bool {
	t := f.tick.Load()
	if t&1 == 0 {
		return false
	}
	st := t >> 1
	s := &f.stripes[stripeOf(f.mask)].n
	v := s.Load()
	var next uint64
	switch {
	case v>>countBits == st && v&countMask < countMask:
		next = v + 1
	case v&countMask == 0:
		next = st<<countBits | 1
	default:
		return false // counts of an older stamp are waiting for a fold
	}
	return s.CompareAndSwap(v, next)
}

// stripeOf picks the calling goroutine's stripe from the address of a
// local variable, which lies in the goroutine's stack: goroutines running
// at once tend to get different stripes and keep them (the address is
// only hashed, never dereferenced).
func stripeOf(mask uint64) uint64 {
	var local byte
	return (uint64(uintptr(unsafe.Pointer(&local))>>11) * 0x9E3779B97F4A7C15 >> 32) & mask
}

// fold moves the striped counts into the buckets. Called with mu held.
func (f *fastWindow) fold() {
	for i := range f.stripes {
		s := &f.stripes[i].n
		if s.Load()&countMask == 0 {
			continue
		}
		v := s.Swap(f.stamp << countBits)
		if n := v & countMask; n != 0 {
			if idx, ok := f.bucketOf(v >> countBits); ok {
				f.w.addAt(idx, int(n), 0, 0)
			}
		}
	}
}

// bucketOf returns the bucket of stamp st, unless a Reset has disowned it
// (or it is too old to remember). Called with mu held.
func (f *fastWindow) bucketOf(st uint64) (int64, bool) {
	e := f.stamps[st%uint64(len(f.stamps))]
	return e.idx, e.valid && e.stamp == st
}

// publish opens or closes the fast path: open in the cached phase while no
// success can trip the breaker, which, with successes only adding calls,
// holds while the window's failures fall short of the ratio of
// max(calls+1, MinCalls) (the striped successes not counted in calls make
// this err on the closed side). It stores only a change, so that the
// cores reading tick keep their copy. Called with mu held.
func (f *fastWindow) publish() {
	t := f.stamp << 1
	if f.phase == phaseCached && !reached(f.w.failures, max(f.w.calls+1, f.minCalls), f.ratio) {
		t |= 1
	}
	if f.tick.Load() != t {
		f.tick.Store(t)
	}
}

// arm starts the phase that holds at now, with its timer. Called with mu
// held.
func (f *fastWindow) arm(now time.Duration) {
	f.stop()
	if f.lead <= 0 {
		return
	}
	idx := f.w.index(now)
	start := time.Duration(idx * f.w.width)
	boundary := start + time.Duration(f.w.width)
	gen := f.gen
	if near := boundary - f.lead; now < near && now >= start+f.lead {
		f.phase = phaseCached
		f.stamp = (f.stamp + 1) & stampMask
		f.stamps[f.stamp%uint64(len(f.stamps))] = stamped{stamp: f.stamp, idx: idx, valid: true}
		f.timer = f.after(near-now, func() { f.tock(gen) })
		return
	}
	// Near a boundary: closed until lead after the next one starts.
	f.phase = phaseNear
	next := boundary + f.lead
	if now < start+f.lead {
		next = start + f.lead // just after this one
	}
	f.timer = f.after(next-now, func() { f.tock(gen) })
}

// tock is the timer: it closes the fast path near a boundary, and reopens
// it with the next bucket after one, or stops when the window is empty.
func (f *fastWindow) tock(gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gen != f.gen {
		return // disowned by stop
	}
	f.timer = nil
	now := f.now()
	f.fold()
	f.w.advance(f.w.index(now))
	if f.w.calls == 0 {
		f.stop()
	} else {
		f.arm(now)
	}
	f.publish()
}

// stop stops the timer and enters the idle phase. Called with mu held.
func (f *fastWindow) stop() {
	f.gen++
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	f.phase = phaseIdle
}

// record is the locked outcome: add in the current bucket, judge, and
// start the timer if it is idle. In the cached phase the timer has told the
// bucket, so only outcomes near a boundary or in an idle window read the
// clock. The striped successes are folded in only when they could change
// the verdict: they only add calls, so a window that holds MinCalls calls
// and does not trip without them does not trip with them (folding writes
// every stripe, which other cores then miss). Called with the breaker's
// lock held.
func (f *fastWindow) record(flags uint8, trip func(Counts) bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	var idx int64
	if e, ok := f.cached(); ok {
		idx = e
	} else {
		now := f.now()
		idx = f.w.index(now)
		if f.phase == phaseIdle {
			f.arm(now)
		}
	}
	f.w.addAt(idx, 1, int(flags&flagFailure), int(flags&flagSlow)>>1)
	t := f.w.counters()
	tripped := trip(t)
	if tripped || t.Calls < f.minCalls {
		f.fold()
		tripped = trip(f.w.counters())
	}
	f.publish()
	return tripped
}

// cached returns the current bucket in the cached phase. Called with mu
// held.
func (f *fastWindow) cached() (int64, bool) {
	if f.phase != phaseCached {
		return 0, false
	}
	return f.bucketOf(f.stamp)
}

// counters returns the window's totals now.
func (f *fastWindow) counters() Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fold()
	return f.w.totals(f.now())
}

// reset empties the window, disowns every success counted so far and
// stops the timer.
func (f *fastWindow) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.stripes {
		f.stripes[i].n.Store(0)
	}
	f.stamps = [len(f.stamps)]stamped{}
	f.w.reset()
	f.stop()
	f.publish()
}

// useClock puts the window on the breaker's clock.
func (f *fastWindow) useClock(c clock.Clock) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now, f.after = c.Monotonic, c.AfterFunc
	f.w.useClock(c)
}
