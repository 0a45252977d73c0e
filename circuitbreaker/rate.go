package circuitbreaker

import (
	"cmp"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
)

// DefaultRatio is [FailureRate].Ratio when zero (resilience4j's default).
const DefaultRatio = 0.5

// FailureRate is a [Policy] that trips when the ratio of failures in a
// [Window] reaches Ratio, once the window holds Window.MinCalls calls
// (resilience4j's failure-rate threshold, Hystrix's
// errorThresholdPercentage). In HalfOpen it judges the first MaxProbes
// probes by the same ratio.
type FailureRate struct {
	// Window is the stretch of calls judged; the zero Window is the last
	// 100 calls.
	Window Window
	// Ratio is the failure ratio, in (0, 1], that trips the breaker. Zero
	// means [DefaultRatio].
	Ratio float64
}

// NewTracker validates f and returns its state for one Breaker.
func (f FailureRate) NewTracker() (Tracker, error) {
	ratio, err := checkRatio("FailureRate.Ratio", f.Ratio, DefaultRatio)
	if err != nil {
		return nil, err
	}
	w, err := newWindow("FailureRate.Window", f.Window)
	if err != nil {
		return nil, err
	}
	t := &failureRate{w: w, ratio: ratio}
	if w.timed() {
		t.fast = newFastWindow(w, w.minCalls, ratio)
	}
	t.setBusy() // an empty window is not clean
	return t, nil
}

type failureRate struct {
	w     *window
	ratio float64
	// fast, for a time window, owns w and counts successes without the
	// breaker's lock (CountSuccess); nil for a count window.
	fast *fastWindow
	// busy is 0 while w.clean() and 1 otherwise, kept for wantsSuccess and
	// the breaker's fast path, which read it without the breaker's lock. It
	// is written only under the lock, after every change to w. Every
	// Closed success reads it: the padding keeps it off the cache lines of
	// neighbouring objects (see consecutive.run).
	_    [cacheLine]byte
	busy atomic.Int64
	_    [cacheLine - 8]byte
}

// timing is timingNone for a time window too: it reads the breaker's clock
// itself, only when its timer does not tell it the bucket (fastWindow).
func (f *failureRate) timingNeeded() timing {
	if f.fast != nil {
		return timingNone
	}
	return windowTiming(f.w)
}

// wantsSuccess is false while the count window is full and holds no
// failure: a success would evict a success and change nothing, not even
// the order of the window, whose calls are all alike. A failure racing with
// this load is ordered after the success, which is a valid linearization.
func (f *failureRate) wantsSuccess() bool { return f.busy.Load() != 0 }

// setBusy updates busy after a change to w.
func (f *failureRate) setBusy() {
	var busy int64
	if !f.w.clean() {
		busy = 1
	}
	f.busy.Store(busy)
}

// countSuccess counts a success of a time window without the breaker's
// lock when no success can trip the breaker and no bucket boundary is
// near; see fastWindow.
func (f *failureRate) countSuccess() bool { return f.fast != nil && f.fast.count() }

func (f *failureRate) Record(c Call) bool {
	var flags uint8
	if c.Outcome == rampart.Failure {
		flags = flagFailure
	}
	if f.fast != nil {
		return f.fast.record(flags, f.trips)
	}
	f.w.add(c.Monotonic, flags)
	f.setBusy()
	return f.trips(f.w.totals(c.Monotonic))
}

// trips reports whether totals t trip the breaker.
func (f *failureRate) trips(t Counts) bool {
	return t.Calls >= f.w.minCalls && reached(t.Failures, t.Calls, f.ratio)
}

func (f *failureRate) Probe(_ Call, p Probes) Verdict {
	return ratioVerdict(p.Failed, p.Succeeded, p.Max, f.ratio)
}

func (f *failureRate) Reset(State) {
	if f.fast != nil {
		f.fast.reset()
		return
	}
	f.w.reset()
	f.setBusy()
}

func (f *failureRate) Counts() Counts {
	if f.fast != nil {
		return f.fast.counters()
	}
	return f.w.totals(nowIf(f.w))
}

func (f *failureRate) UseClock(c clock.Clock) {
	if f.fast != nil {
		f.fast.useClock(c)
		return
	}
	f.w.useClock(c)
}

// ratioVerdict judges n probes of which bad count toward ratio: re-open
// once bad/n reaches ratio whatever the rest do, close once it cannot.
func ratioVerdict(bad, good, n int, ratio float64) Verdict {
	switch hit, miss := judge(bad, good, n, ratio); {
	case hit:
		return VerdictReopen
	case miss:
		return VerdictClose
	}
	return VerdictPending
}

// windowTiming is the timing a window needs.
func windowTiming(w *window) timing {
	if w.timed() {
		return timingNow
	}
	return timingNone
}

// nowIf reads the clock only for a time window.
func nowIf(w *window) time.Duration {
	if w.timed() {
		return w.mono()
	}
	return 0
}

// DefaultSlowCallThreshold is [SlowCalls].Threshold when zero
// (resilience4j's default).
const DefaultSlowCallThreshold = time.Minute

// SlowCalls is a [Policy] that trips when the ratio of calls that took at
// least Threshold in a [Window] reaches Ratio, once the window holds
// Window.MinCalls calls (resilience4j's slow-call rate threshold). In
// HalfOpen a slow or failed probe counts as bad. Combine it with
// [FailureRate] through [Any].
type SlowCalls struct {
	// Threshold is the latency from which a call is slow. Zero means
	// [DefaultSlowCallThreshold]; negative is an error.
	Threshold time.Duration
	// Window is the stretch of calls judged; the zero Window is the last
	// 100 calls.
	Window Window
	// Ratio is the slow-call ratio, in (0, 1], that trips the breaker.
	// Zero means 1 (resilience4j's default).
	Ratio float64
}

// NewTracker validates s and returns its state for one Breaker.
func (s SlowCalls) NewTracker() (Tracker, error) {
	if s.Threshold < 0 {
		return nil, fmt.Errorf("circuitbreaker: SlowCalls.Threshold must be >= 0, got %s", durationString(s.Threshold))
	}
	ratio, err := checkRatio("SlowCalls.Ratio", s.Ratio, 1)
	if err != nil {
		return nil, err
	}
	w, err := newWindow("SlowCalls.Window", s.Window)
	if err != nil {
		return nil, err
	}
	return &slowCalls{w: w, ratio: ratio, threshold: cmp.Or(s.Threshold, DefaultSlowCallThreshold)}, nil
}

type slowCalls struct {
	w         *window
	ratio     float64
	threshold time.Duration
	bad, good int // probes of the current HalfOpen period
}

func (s *slowCalls) timingNeeded() timing { return timingLatency }
func (s *slowCalls) wantsSuccess() bool   { return true }

func (s *slowCalls) Record(c Call) bool {
	flags := uint8(0)
	if c.Outcome == rampart.Failure {
		flags = flagFailure // counted for State, never judged
	}
	if c.Latency >= s.threshold {
		flags |= flagSlow
	}
	s.w.add(c.Monotonic, flags)
	t := s.w.totals(c.Monotonic)
	return t.Calls >= s.w.minCalls && reached(t.SlowCalls, t.Calls, s.ratio)
}

// Probe counts a failed probe as bad whatever its latency: judged on
// latency alone, a probe that failed fast would close the breaker.
func (s *slowCalls) Probe(c Call, p Probes) Verdict {
	if c.Outcome == rampart.Failure || c.Latency >= s.threshold {
		s.bad++
	} else {
		s.good++
	}
	return ratioVerdict(s.bad, s.good, p.Max, s.ratio)
}

// TripCause: failures never trip a SlowCalls, so a trip or re-open on a
// success is due to the slow calls.
func (s *slowCalls) TripCause() error { return ErrSlowCalls }

func (s *slowCalls) Reset(State) {
	s.w.reset()
	s.bad, s.good = 0, 0
}

func (s *slowCalls) Counts() Counts { return s.w.totals(nowIf(s.w)) }

func (s *slowCalls) UseClock(c clock.Clock) {
	s.w.useClock(c)
}
