package concurrency

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart/internal/tuned"
	"github.com/rampart-go/rampart/observe"
)

// AdaptiveConfig configures an [AdaptiveLimiter]. Every zero field means
// its documented default.
type AdaptiveConfig struct {
	// MinLimit is the smallest the limit goes, however slow the calls.
	// Zero means 1; it must not be negative.
	MinLimit int
	// MaxLimit is the largest the limit goes, however fast the calls.
	// Zero means 1000, or MinLimit when that is larger; it must not be
	// negative nor, when set, below MinLimit.
	MaxLimit int
	// InitialLimit is the limit before the first window closes. Zero means
	// 20, raised to MinLimit or lowered to MaxLimit when 20 is outside
	// them; when set it must be between MinLimit and MaxLimit. Start below
	// the dependency's capacity: the limiter learns the unloaded latency
	// from its first windows, and a start that already queues calls in the
	// dependency teaches it a latency that is too high.
	InitialLimit int
	// Window is the smoothing window: the limiter averages the latency of
	// the calls that finish in a window, and moves the limit once per
	// window, from that average. A window closes when the first timed
	// call finishes after Window has passed since it opened and at least
	// 10 calls were timed in it, so a quiet limiter keeps its window open
	// until it has enough samples. Zero means 1s; it must not be negative. A
	// window should span five of the dependency's usual latencies or more,
	// so that most calls that start in it also finish in it. A shorter
	// window follows the dependency faster.
	Window time.Duration
	// MaxWaiting bounds the calls that wait for a slot in [Wait] mode: a
	// call that finds MaxWaiting calls already waiting is refused at once
	// with a [*LimitedError]. Zero means no bound other than each call's
	// context; it must not be negative. [Refuse] mode never waits.
	MaxWaiting int
}

// minSamples is the fewest calls a window averages before the limit moves.
const minSamples = 10

// AdaptiveLimiter bounds how many calls run at once, as a [Limiter] does,
// but finds the bound by itself: it measures how long calls take and
// lowers its limit when calls queue in the dependency, raises it when they
// do not. The estimator is TCP Vegas's (Brakmo and Peterson, "TCP Vegas:
// New Techniques for Congestion Detection and Avoidance", SIGCOMM 1994), as
// Netflix's concurrency-limits library adapted it to request concurrency
// (VegasLimit): the no-load latency is the baseline; a window whose
// average latency is rtt, at limit L, has about L × (1 − baseline/rtt)
// calls queued in the dependency rather than served. Once per
// [AdaptiveConfig.Window]:
//
//   - with fewer than max(1, L/20) calls queued, and at least L/2 calls
//     in flight at some moment of the window (so that the limit was
//     actually used), the limit grows by a tenth (at least 1);
//   - with more than max(2, L/10) queued, or rtt above twice the
//     baseline, it drops to the estimated capacity L × baseline/rtt plus
//     max(1, L/20), by at least 1 but never below half of L in one
//     window (the floor Netflix's Gradient2 puts on its gradient), so one
//     noisy window cannot collapse it;
//   - in between it stays.
//
// It then stays between MinLimit and MaxLimit. At equilibrium a few calls
// (a twentieth to a tenth of the limit) wait in the dependency, so it is
// kept busy and latency stays within about a tenth of the unloaded one.
//
// Vegas rather than Gradient2 (Netflix's other estimator, which compares
// a short-term with a long-term average latency): Vegas's estimate counts
// queued calls, so the limit settles at the dependency's capacity plus a
// few, and its baseline is a minimum, which does not drift. An average
// follows a long incident up until it equals the incident's latency; the
// limiter then sees no queue and raises the limit while the dependency is
// still unhealthy (a known complaint about failsafe-go's adaptive limiter,
// whose baseline is such an average).
//
// # What feeds the baseline
//
// The baseline must be the dependency's latency without this limiter's
// queue, or the limiter no longer measures what the dependency does under
// load. So only these windows move it:
//
//   - a window whose average is below the baseline lowers it to that
//     average: nothing queues below the unloaded latency;
//   - a window measured with the limit at MinLimit, the least load this
//     limiter puts on the dependency, whose average is above the baseline,
//     raises it to that average: such latency is not caused by calls
//     queueing behind this limiter's, so it is the dependency's unloaded
//     latency now (a deploy made it slower, an incident made every call
//     slow), as Envoy's adaptive concurrency filter re-measures its
//     minimum latency at a low fixed concurrency;
//   - while the baseline is such a re-learned one, a window whose average
//     is below half of it means the dependency is fast again: the baseline
//     returns to the lowest window average ever seen, not to this window's
//     average, which was measured at whatever load the limit then allowed
//     (a baseline learned at a high limit makes every queue look like
//     none, and the limit stays at the overload that taught it).
//
// No other window moves it. A re-learned baseline says the dependency is
// slower at every load; it says nothing about how many calls the
// dependency can take. The limiter therefore returns to the limit of the
// last window that used at least half of it and did not call for a drop
// (the capacity it measured before the latency rose) and does not grow
// past it until the baseline returns to the lowest one. A window with
// fewer calls in flight measured no capacity: when no window has measured
// one yet (a quiet spell of cheap calls, one at a time, taught the
// baseline), the limit returns to at least its initial value and grows
// from there as usual. When every call takes the same time whatever
// the load (every call ends at the same timeout, say), latency no longer
// counts a queue, and the last measured capacity is the best estimate.
// Netflix's limiters show what happens otherwise: a Gradient2 limit fed a
// steady timeout grows to its maximum (concurrency-limits issue 137), and
// periodically re-probing the baseline upwards drifts the limit up during
// prolonged high latency (issue 34). A dependency that becomes slower and, at
// the same time, able to take more calls is therefore used at its old
// capacity until its latency falls again. With an unloaded latency of
// 10ms, a capacity of 20 and a 600s incident in which every call takes
// 1s, the limit falls to MinLimit in the incident's first windows,
// re-learns 1s there, returns to about 22 for the rest of the incident
// (not to MaxLimit), and is within a fifth of 20 a few windows after the
// incident ends, with the baseline 10ms again.
//
// Like a [Limiter], an AdaptiveLimiter is shared state, safe for
// concurrent use, and usable on its own: [AdaptiveLimiter.Acquire] or
// [AdaptiveLimiter.TryAcquire] a [Permit], do the work, and give the
// permit to [AdaptiveLimiter.Release]. Taking and releasing a free slot
// allocates nothing and takes no lock, except once per window, when the
// releasing call moves the limit. A call's latency is measured from when it
// gets its slot, so time spent waiting for a slot in this limiter does not
// count as the dependency's. The first 256 calls of a window are all
// timed, then one call in eight (a clock read costs about as much as the
// rest of the acquire and release). A timed call that failed (its slot
// given back by [AdaptiveLimiter.ReleaseFailed], as [NewLayer] does for a
// call whose inner service returned an error or panicked) counts only
// when it took at least the baseline: a dependency failing fast (an
// outage answered at once, a breaker below refusing) is not fast, and
// its failures' speed says nothing about its queue, so it would teach a
// baseline the dependency cannot keep (Netflix's limiters take no sample
// from a dropped call for the same reason); a slow failure (a timeout)
// is the latency the caller felt, and counts. Before the first window
// closes there is no baseline, and no failed call counts. A timed call counts in
// the window in which it finishes, its latency and its count together,
// even when it finishes as another call closes that window, so a window's
// average is never below its fastest call. A window counts at most 65535
// calls and about 78 hours of summed latency; a call beyond either is not
// counted.
//
// Its bounds, window and MaxWaiting can change while calls flow, with
// [AdaptiveLimiter.Tune].
//
// The zero AdaptiveLimiter has no slots, as the zero Limiter: Limit and
// InFlight are 0, Ready is false, Acquire refuses at once with a
// RetryAfter of the largest time.Duration, TryAcquire fails, and
// [NewLayer] refuses it. Make one with [NewAdaptive]. A nil
// *AdaptiveLimiter is the same (Baseline is 0, Release does nothing, Tune
// is an error).
type AdaptiveLimiter struct {
	// Set by NewAdaptive, never modified.
	made  bool      // the zero AdaptiveLimiter, not made by NewAdaptive, has no slots
	epoch time.Time // windowEnd is measured from it

	// The settings Tune changes, guarded by mu.
	minLimit, maxLimit int64
	window             time.Duration
	maxWaiting         int

	// watchers are the Observers of the layers built with the limiter,
	// told of each Tune.
	watchers tuned.Watchers

	limit    atomic.Int64 // current limit; written under mu
	inFlight atomic.Int64
	// waiting counts calls in waiters, plus a call about to look for a
	// slot under mu before joining them: see Acquire.
	waiting atomic.Int64

	// sums is the open window's samples: how many timed calls finished in
	// it, in the low sampleBits bits, and the sum of their latencies in
	// nanoseconds above them. One word, so that a Release adds a call's
	// count and its latency in one step and closeWindow takes both in one
	// step: a call counts, duration and all, in exactly one window.
	sums        atomic.Uint64
	maxInFlight atomic.Int64 // most slots held at once in the window
	windowEnd   atomic.Int64 // time since epoch, in nanoseconds, at which the window may close
	// acquired counts slots taken, to time one call in sampleEvery once
	// the window has sampleAll samples.
	acquired atomic.Uint64

	// refusal is returned for every refusal until the next window closes,
	// so refusing allocates nothing. It is replaced, never modified.
	refusal atomic.Pointer[LimitedError]

	mu      sync.Mutex
	waiters list.List // of chan struct{}; guarded by mu
	// critical holds the critical calls waiting with the critical reserve
	// taken too, served before waiters (see criticality.go). Of chan
	// struct{}; guarded by mu.
	critical    list.List
	critWaiting atomic.Int64 // critical.Len(), for takeBy to read without mu
	// Guarded by mu: the baseline; the lowest window average ever seen;
	// the limit of the last window that used half of it and did not call
	// for a drop (or the initial limit: see measured); and the
	// limit not to grow past while the baseline is a re-learned one, 0
	// when there is none.
	baseline, lowest time.Duration
	held, ceiling    int64
	// measured reports whether held was measured, by a window that used
	// at least half its limit, or is only the initial limit. Guarded by mu.
	measured bool
	// base is baseline in nanoseconds, for ReleaseFailed to read without
	// the lock; written under mu.
	base atomic.Int64
}

const (
	// sampleAll is how many calls of a window are all timed; after them,
	// one call in sampleEvery is. A clock read costs about as much as the
	// rest of an acquire and release together, and the average latency of
	// a regular sample of the calls is their average latency.
	sampleAll   = 256
	sampleEvery = 8
	// untimed is the start of a Permit whose call is not timed.
	untimed time.Duration = -1

	// sampleBits is how many low bits of AdaptiveLimiter.sums count the
	// window's samples; the other 48 sum their latencies, up to about 78
	// hours. A sample that would overflow either is not recorded.
	sampleBits = 16
	maxSamples = 1<<sampleBits - 1
	maxLatency = 1<<(64-sampleBits) - 1 // nanoseconds
)

// sampleCount returns how many samples sums holds.
func sampleCount(sums uint64) int64 { return int64(sums & maxSamples) }

// Permit is a slot taken from an [AdaptiveLimiter]: it records when the
// slot was taken, so that [AdaptiveLimiter.Release] can measure the call.
// It is a value; give each one to Release exactly once. The zero Permit
// holds no slot, and Release ignores it.
type Permit struct {
	// start is when the slot was taken, as time since the limiter's
	// epoch, plus 1 so that a slot taken at the epoch is not the zero
	// Permit; or untimed.
	start time.Duration
}

// permit returns the Permit of a slot just taken, n slots now held: timed
// (it reads only the monotonic clock, time.Since, about half the cost of
// time.Now) while the window has fewer than sampleAll samples, and then
// one call in sampleEvery.
func (l *AdaptiveLimiter) permit(n int64) Permit {
	for m := l.maxInFlight.Load(); n > m && !l.maxInFlight.CompareAndSwap(m, n); m = l.maxInFlight.Load() {
	}
	if l.acquired.Add(1)%sampleEvery != 0 && sampleCount(l.sums.Load()) >= sampleAll {
		return Permit{start: untimed}
	}
	return Permit{start: time.Since(l.epoch) + 1}
}

// NewAdaptive returns an AdaptiveLimiter configured by cfg. It returns an
// error naming the field when a field is outside the accepted values given
// in [AdaptiveConfig].
func NewAdaptive(cfg AdaptiveConfig) (*AdaptiveLimiter, error) {
	set, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	initial := cfg.InitialLimit
	switch {
	case initial == 0:
		initial = int(min(max(20, set.minLimit), set.maxLimit))
	case int64(initial) < set.minLimit || int64(initial) > set.maxLimit:
		return nil, fmt.Errorf("concurrency: AdaptiveConfig.InitialLimit must be between MinLimit %d and MaxLimit %d (or 0), got %d", set.minLimit, set.maxLimit, initial)
	}
	l := &AdaptiveLimiter{
		made:       true,
		minLimit:   set.minLimit,
		maxLimit:   set.maxLimit,
		window:     set.window,
		maxWaiting: set.maxWaiting,
		epoch:      time.Now(),
	}
	l.limit.Store(int64(initial))
	l.held = int64(initial)
	l.windowEnd.Store(int64(set.window) + 1) // times since epoch are counted from 1: see Permit
	l.refusal.Store(&LimitedError{})
	return l, nil
}

// adaptiveSettings are the settings of an AdaptiveConfig that Tune
// changes, defaults applied.
type adaptiveSettings struct {
	minLimit, maxLimit int64
	window             time.Duration
	maxWaiting         int
}

// settings validates cfg's fields but InitialLimit and returns them with
// their defaults applied, or the error naming the first bad one.
func (cfg AdaptiveConfig) settings() (adaptiveSettings, error) {
	switch {
	case cfg.MinLimit < 0:
		return adaptiveSettings{}, fmt.Errorf("concurrency: AdaptiveConfig.MinLimit must be >= 0 (0 means 1), got %d", cfg.MinLimit)
	case cfg.MaxLimit < 0:
		return adaptiveSettings{}, fmt.Errorf("concurrency: AdaptiveConfig.MaxLimit must be >= 0 (0 means 1000), got %d", cfg.MaxLimit)
	case cfg.MaxLimit > 0 && cfg.MaxLimit < cfg.MinLimit:
		return adaptiveSettings{}, fmt.Errorf("concurrency: AdaptiveConfig.MaxLimit must be >= MinLimit %d (or 0), got %d", cfg.MinLimit, cfg.MaxLimit)
	case cfg.Window < 0:
		return adaptiveSettings{}, fmt.Errorf("concurrency: AdaptiveConfig.Window must be >= 0 (0 means 1s), got %v", cfg.Window)
	case cfg.MaxWaiting < 0:
		return adaptiveSettings{}, fmt.Errorf("concurrency: AdaptiveConfig.MaxWaiting must be >= 0 (0 means no bound), got %d", cfg.MaxWaiting)
	}
	lo := max(1, cfg.MinLimit)
	hi := cfg.MaxLimit
	if hi == 0 {
		hi = max(1000, lo)
	}
	return adaptiveSettings{minLimit: int64(lo), maxLimit: int64(hi), window: cmp.Or(cfg.Window, time.Second), maxWaiting: cfg.MaxWaiting}, nil
}

// AdaptiveTuning is the part of an [AdaptiveConfig] that
// [AdaptiveLimiter.Tune] changes while the limiter is in use: the bounds
// of the limit, the window and MaxWaiting. Each field means what the
// AdaptiveConfig field of the same name means, zero values and defaults
// included. InitialLimit has no counterpart: the limit a limiter in use
// has is the one it learnt.
type AdaptiveTuning struct {
	// MinLimit is the smallest the limit goes; zero means 1.
	MinLimit int
	// MaxLimit is the largest the limit goes; zero means 1000, or
	// MinLimit when that is larger.
	MaxLimit int
	// Window is the smoothing window; zero means 1s.
	Window time.Duration
	// MaxWaiting bounds the calls that wait for a slot; zero means no
	// bound.
	MaxWaiting int
}

// Tune changes l's settings while calls flow, keeping what l has learnt
// (its baseline and the open window's samples), or returns the error
// [NewAdaptive] would return for the same fields (or one saying that l
// is nil or a zero AdaptiveLimiter), changing nothing. What changes
// when:
//
//   - the limit is brought within the new [MinLimit, MaxLimit] at once (a
//     documented clamp, as each window's move is clamped): slots a higher
//     limit frees go to the callers waiting first; under a lower one no
//     call gets a slot until InFlight is below it, as after a drop;
//   - the open window closes when it would have; the next lasts the new
//     Window;
//   - a new MaxWaiting applies to the calls that come to wait after it:
//     the calls waiting keep their place.
//
// Each layer built with l that has an Observer is told with an event of
// kind [observe.Tuned] (Source Concurrency, the layer's Name); l keeps
// those Observers as long as it lives. Safe for concurrent use; the
// settings are read only with l's lock held, so taking and giving back a
// slot costs what it cost.
func (l *AdaptiveLimiter) Tune(t AdaptiveTuning) error {
	if l == nil {
		return errors.New("concurrency: Tune of a nil *AdaptiveLimiter")
	}
	set, err := AdaptiveConfig{MinLimit: t.MinLimit, MaxLimit: t.MaxLimit, Window: t.Window, MaxWaiting: t.MaxWaiting}.settings()
	if err != nil {
		return err
	}
	if !l.made {
		return errors.New("concurrency: Tune of a zero AdaptiveLimiter: make it with NewAdaptive")
	}
	l.mu.Lock()
	l.minLimit, l.maxLimit, l.window, l.maxWaiting = set.minLimit, set.maxLimit, set.window, set.maxWaiting
	if limit := l.limit.Load(); limit < set.minLimit || limit > set.maxLimit {
		l.limit.Store(min(max(limit, set.minLimit), set.maxLimit))
		l.wakeLocked()
	}
	l.mu.Unlock()
	l.watchers.Tell(observe.Event{Source: observe.Concurrency})
	return nil
}

// Limit returns the current limit: how many calls may run at once now.
func (l *AdaptiveLimiter) Limit() int {
	if l == nil {
		return 0
	}
	return int(l.limit.Load())
}

// InFlight returns how many slots are held right now. It may exceed Limit
// for a while after the limit drops: calls in flight finish, and no new
// one starts until InFlight is below Limit.
func (l *AdaptiveLimiter) InFlight() int {
	if l == nil {
		return 0
	}
	return int(l.inFlight.Load())
}

// Baseline returns the latency the limiter takes for the dependency's
// unloaded latency, 0 before the first window closes.
func (l *AdaptiveLimiter) Baseline() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.baseline
}

// Ready reports whether a call arriving now would get a slot without
// waiting: one is free and no call waits for one. It is advisory, as
// [Limiter.Ready] is, and what package loadshed uses.
func (l *AdaptiveLimiter) Ready() bool {
	return l != nil && l.waiting.Load() == 0 && l.inFlight.Load() < l.limit.Load()
}

// TryAcquire takes a slot if one is free and no call waits in Acquire, and
// reports whether it did. It never blocks. After it returns true, give the
// Permit to [AdaptiveLimiter.Release] when the work is done.
func (l *AdaptiveLimiter) TryAcquire() (Permit, bool) {
	if l == nil || l.waiting.Load() > 0 {
		return Permit{}, false
	}
	n, ok := l.takeSlot()
	if !ok {
		return Permit{}, false
	}
	return l.permit(n), true
}

// Acquire takes a slot, blocking until one is free or ctx is done; callers
// waiting for a slot get one in the order they called Acquire. On success
// give the Permit to [AdaptiveLimiter.Release] when the work is done.
//
// When ctx is done first, or already done when Acquire is called, Acquire
// takes no slot and returns an error wrapping ctx.Err(), which does not
// match [ErrLimited]. When [AdaptiveConfig.MaxWaiting] calls already wait,
// it returns at once a [*LimitedError] matching ErrLimited whose
// RetryAfter is the latest window's average latency (about when calls in
// flight finish), 0 before the first window closes; do not modify it. The
// zero AdaptiveLimiter, and a nil one, returns at once a refusal whose
// RetryAfter is the largest time.Duration.
//
// Acquire allocates nothing when a slot is free; waiting allocates a
// channel.
func (l *AdaptiveLimiter) Acquire(ctx context.Context) (Permit, error) {
	if l == nil || !l.made {
		return Permit{}, noSlots
	}
	if err := ctx.Err(); err != nil {
		return Permit{}, fmt.Errorf("concurrency: waiting for a slot: %w", err)
	}
	if l.waiting.Load() == 0 {
		if n, ok := l.takeSlot(); ok {
			return l.permit(n), nil
		}
	}
	return l.wait(ctx, &l.waiters, l.limit.Load)
}

// wait waits in line for a slot below bound(): in waiters for an
// ordinary call, in critical for a critical call that found its reserve
// taken too. It returns Acquire's results.
func (l *AdaptiveLimiter) wait(ctx context.Context, line *list.List, bound func() int64) (Permit, error) {
	l.mu.Lock()
	// Count this call as waiting before looking for a slot: a Release
	// decrements inFlight and then loads waiting, this call increments
	// waiting and then loads inFlight (both sequentially consistent), so
	// either this call sees the freed slot or that Release sees this call
	// and hands it the slot once this call is in waiters.
	l.waiting.Add(1)
	if line.Len() == 0 && (line == &l.critical || l.critical.Len() == 0) {
		if n, ok := l.takeSlotBelow(bound()); ok {
			l.waiting.Add(-1)
			l.mu.Unlock()
			return l.permit(n), nil
		}
	}
	if l.maxWaiting > 0 && l.waiters.Len()+l.critical.Len() >= l.maxWaiting {
		l.waiting.Add(-1)
		l.mu.Unlock()
		return Permit{}, l.refusal.Load()
	}
	ready := make(chan struct{})
	elem := line.PushBack(ready)
	if line == &l.critical {
		l.critWaiting.Add(1)
	}
	l.mu.Unlock()

	select {
	case <-ready:
		return l.permit(l.inFlight.Load()), nil
	case <-ctx.Done():
		l.mu.Lock()
		select {
		case <-ready:
			// Handed a slot as ctx ended: give it to the next in line.
			l.mu.Unlock()
			l.inFlight.Add(-1)
			l.wake()
		default:
			line.Remove(elem)
			l.waiting.Add(-1)
			if line == &l.critical {
				l.critWaiting.Add(-1)
			}
			l.mu.Unlock()
		}
		return Permit{}, fmt.Errorf("concurrency: waiting for a slot: %w", ctx.Err())
	}
}

// Release gives back the slot p holds, records how long the call took,
// and hands the slot to the first caller waiting in Acquire. Once per
// window it moves the limit (see [AdaptiveLimiter]). It never blocks on
// other callers, except for the brief lock of a handoff, and never panics.
// A zero Permit is ignored, and so is a Release while no slot is held.
func (l *AdaptiveLimiter) Release(p Permit) { l.release(p, false) }

// ReleaseFailed is [AdaptiveLimiter.Release] for a call that failed: its
// latency is a sample only when it is at least the baseline (see
// [AdaptiveLimiter]), so a dependency failing fast does not look fast.
// Which outcomes are failures is the caller's choice; [NewLayer] calls it
// for an error or a panic of the inner service.
func (l *AdaptiveLimiter) ReleaseFailed(p Permit) { l.release(p, true) }

func (l *AdaptiveLimiter) release(p Permit, failed bool) {
	if l == nil || p.start == 0 || !decrementHeld(&l.inFlight) {
		return
	}
	if p.start != untimed {
		now := time.Since(l.epoch) + 1
		d := max(0, now-p.start)
		if failed {
			if b := l.base.Load(); b == 0 || int64(d) < b {
				d = untimed // failing fast: no sample
			}
		}
		if d != untimed {
			if n := l.record(uint64(d)); n >= minSamples && int64(now) >= l.windowEnd.Load() {
				l.closeWindow(now)
			}
		}
	}
	if l.waiting.Load() > 0 {
		l.wake()
	}
}

// record adds a call that took d nanoseconds to the open window, and
// returns how many samples the window holds with it. A call that would
// overflow the window's count or sum is left out.
func (l *AdaptiveLimiter) record(d uint64) int64 {
	for {
		old := l.sums.Load()
		if sampleCount(old) == maxSamples || d > maxLatency-old>>sampleBits {
			return sampleCount(old)
		}
		if l.sums.CompareAndSwap(old, old+d<<sampleBits+1) {
			return sampleCount(old) + 1
		}
	}
}

// takeSlot takes a slot if fewer than limit are held, and returns how
// many are held with it.
func (l *AdaptiveLimiter) takeSlot() (int64, bool) { return l.takeSlotBelow(l.limit.Load()) }

// takeSlotBelow takes a slot if fewer than bound are held, and returns
// how many are held with it.
func (l *AdaptiveLimiter) takeSlotBelow(bound int64) (int64, bool) {
	for {
		n := l.inFlight.Load()
		if n >= bound {
			return n, false
		}
		if l.inFlight.CompareAndSwap(n, n+1) {
			return n + 1, true
		}
	}
}

// wake hands free slots to waiting callers, first come first served.
func (l *AdaptiveLimiter) wake() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wakeLocked()
}

func (l *AdaptiveLimiter) wakeLocked() {
	for l.critical.Len() > 0 {
		if _, ok := l.takeSlotBelow(l.criticalBound()); !ok {
			break
		}
		ready := l.critical.Remove(l.critical.Front()).(chan struct{})
		l.waiting.Add(-1)
		l.critWaiting.Add(-1)
		close(ready)
	}
	for l.waiters.Len() > 0 && l.critical.Len() == 0 {
		if _, ok := l.takeSlot(); !ok {
			return
		}
		ready := l.waiters.Remove(l.waiters.Front()).(chan struct{})
		l.waiting.Add(-1)
		close(ready)
	}
}

// closeWindow averages the window's samples and moves the limit. Only one
// caller closes a window; a caller that finds the lock taken leaves it to
// a later Release.
func (l *AdaptiveLimiter) closeWindow(now time.Duration) {
	if !l.mu.TryLock() {
		return
	}
	defer l.mu.Unlock()
	if int64(now) < l.windowEnd.Load() || sampleCount(l.sums.Load()) < minSamples {
		return // another caller closed it
	}
	sums := l.sums.Swap(0)
	n, sum := sampleCount(sums), int64(sums>>sampleBits)
	peak := l.maxInFlight.Swap(l.inFlight.Load())
	l.windowEnd.Store(int64(now + l.window))
	if sum <= 0 {
		return // calls faster than the clock's resolution teach nothing
	}
	avg := time.Duration(sum / n)
	limit := l.limit.Load()
	next := l.estimate(limit, avg, peak)
	l.base.Store(int64(l.baseline))
	l.refusal.Store(&LimitedError{Wait: avg})
	if next != limit {
		l.limit.Store(next)
		l.wakeLocked()
	}
}

// estimate returns the next limit after a window at limit whose calls
// took avg on average with at most peak calls in flight at once, and
// updates the baseline as the type's doc says. Called with mu held.
func (l *AdaptiveLimiter) estimate(limit int64, avg time.Duration, peak int64) int64 {
	relearned := false
	switch {
	case l.baseline == 0:
		l.baseline, l.lowest = avg, avg
	case l.baseline > l.lowest && avg < l.baseline/2:
		// Fast again after a slow spell: back to the unloaded latency.
		l.baseline, l.ceiling = min(l.lowest, avg), 0
		l.lowest = l.baseline
	case avg < l.baseline:
		l.baseline = avg
		l.lowest = min(l.lowest, avg)
	case limit == l.minLimit && avg > l.baseline:
		l.baseline = avg // slow at the least load: the dependency's own latency now
		relearned = true
	}
	lim := float64(limit)
	queued := lim * (1 - float64(l.baseline)/float64(avg))
	alpha := max(1, lim/20)
	beta := max(2, lim/10)
	next := lim
	drop := queued > beta || avg > 2*l.baseline
	switch {
	case drop:
		next = min(max(lim-queued+alpha, lim/2), lim-1)
	case queued < alpha && 2*peak >= limit:
		next = lim + max(1, lim/10)
	}
	n := int64(math.Round(next))
	switch {
	case relearned:
		// The latency rose at the least load too: it was not a queue. Go
		// back to the capacity measured before, and no further; with none
		// measured yet, there is nothing to hold it to.
		n = max(l.held, limit)
		if l.measured {
			l.ceiling = n
		}
	case !drop && 2*peak >= limit:
		// A window that used its limit without a queue measured it.
		l.held, l.measured = limit, true
	}
	if l.ceiling > 0 {
		n = min(n, l.ceiling)
	}
	return min(max(n, l.minLimit), l.maxLimit)
}

func (l *AdaptiveLimiter) valid() error {
	if l == nil {
		return errors.New("concurrency: limiter must not be nil")
	}
	if !l.made {
		return errors.New("concurrency: limiter must be made by NewAdaptive, got a zero AdaptiveLimiter")
	}
	return nil
}

// take takes a slot as the mode says: in Wait mode with Acquire; in Refuse
// mode at once or not at all, refusing with the window's shared refusal. A
// ctx already done takes no slot, in either mode.
func (l *AdaptiveLimiter) take(ctx context.Context, mode Mode) (Permit, error) {
	p, done, critical, err := l.takeBy(ctx)
	if done {
		return p, err
	}
	if mode == Wait && critical { // never for the zero AdaptiveLimiter: takeBy finds no limit
		return l.wait(ctx, &l.critical, l.criticalBound)
	}
	if mode == Wait {
		return l.Acquire(ctx)
	}
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	p, ok := l.TryAcquire()
	if !ok {
		return Permit{}, l.refusal.Load()
	}
	return p, nil
}

func (l *AdaptiveLimiter) give(p Permit, failed bool) { l.release(p, failed) }
