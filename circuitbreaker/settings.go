package circuitbreaker

import (
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart/observe"
)

// Tuning is the part of a breaker's [Config] that [Breaker.Tune] changes
// while the breaker runs: its cool-down schedule, its probes and the
// thresholds and window of its policy. Each field means what the Config
// field of the same name means, zero values and defaults included, except
// Policy, whose nil keeps the breaker's policy as it is.
type Tuning struct {
	// CoolDown is the cool-down after a trip from Closed.
	CoolDown time.Duration
	// MaxCoolDown and CoolDownMultiplier make the cool-down grow
	// on consecutive re-opens.
	MaxCoolDown        time.Duration
	CoolDownMultiplier float64
	// MaxProbes is how many probes HalfOpen admits at once.
	MaxProbes int
	// ProbeLease is how long a probe holds its slot without an outcome.
	ProbeLease time.Duration
	// Policy, when set, gives the policy's new thresholds and window. It
	// must be of the kind the breaker was built with: a [Consecutive] for
	// a Consecutive breaker, a [FailureRate] or [SlowCalls] with a window
	// of the same kind (count or time), or an [Any] or [SuccessRate] of
	// such policies in the same order. nil keeps the policy unchanged.
	Policy Policy
}

// Tune changes b's cool-down schedule, probe settings and policy
// thresholds while calls flow, keeping its state, or returns an error
// changing nothing: the error circuitbreaker.New would return for the same
// fields, one saying that Policy is not of the breaker's kind, or one
// saying that b is nil. Safe for
// concurrent use, and free for calls: the settings it changes are read
// only with the breaker's lock held (a time window's, with its own lock),
// never on the Closed path.
//
// What changes when:
//   - an Open period keeps the deadline it started with, to the
//     nanosecond: a new CoolDown is the cool-down of the next trip;
//   - with a growing schedule (MaxCoolDown set), the next re-open
//     grows from the current cool-down, brought within the new
//     [CoolDown, MaxCoolDown]; with a constant one, it is the new
//     CoolDown;
//   - a HalfOpen period admits probes by the new MaxProbes from the next
//     probe asked for (probes in flight beyond a lower bound finish as
//     they would), and a new ProbeLease applies to probes admitted after
//     the change;
//   - with Policy nil, the policy and its counts are kept;
//   - with Policy set, the counts are kept where the new settings can use
//     them: a run of consecutive failures is kept; a count window keeps
//     its most recent calls, as many as the new Size holds; a time window
//     keeps its buckets when Period and Buckets are unchanged, and is
//     emptied (as on entering Closed) when either changes; the calls
//     already counted keep the judgement they were counted with (a slow
//     call stays slow under a higher SlowCalls.Threshold);
//   - a change never trips the breaker by itself: the counts kept are
//     judged by the new thresholds (Failures, Ratio, MinCalls) at the next
//     outcome recorded, and the probes of a HalfOpen period at the next
//     probe outcome;
//   - every other setting (Name, Observer, Clock, IsFailure, ...) is
//     kept.
//
// The change is reported to the breaker's Observer as an event of kind
// [observe.Tuned] whose Calls and Failures are the counts the policy kept
// (a run of n consecutive failures as n calls, n failures), zero outside
// Closed. The events are delivered as transitions are to listeners (see
// [Breaker.Subscribe] and [Config.AsyncListeners]): in the order the
// changes were applied, one at a time, without the breaker's lock (the
// Observer may call Tune), a panic going to [Config.ListenerPanic]. A
// Tune that finds another Tune's event being delivered leaves its own to
// that delivery, and may return before it is delivered.
func (b *Breaker) Tune(t Tuning) error {
	if b == nil {
		return errors.New("circuitbreaker: Tune of a nil *Breaker")
	}
	set, err := Config{
		CoolDown:           t.CoolDown,
		MaxCoolDown:        t.MaxCoolDown,
		CoolDownMultiplier: t.CoolDownMultiplier,
		MaxProbes:          t.MaxProbes,
		ProbeLease:         t.ProbeLease,
	}.validate()
	if err != nil {
		return err
	}
	var next Tracker
	if t.Policy != nil {
		if next, err = newTracker("Tuning.Policy", t.Policy); err != nil {
			return err
		}
		if next == nil {
			return fmt.Errorf("circuitbreaker: Tuning.Policy %T returned a nil Tracker", t.Policy)
		}
	}
	b.mu.Lock()
	b.setUp()
	var r retuner
	if next != nil {
		var ok bool
		if r, ok = b.tracker.(retuner); !ok {
			b.mu.Unlock()
			return fmt.Errorf("circuitbreaker: Tuning.Policy: the breaker's policy (tracker %T) cannot change while it runs", b.tracker)
		}
		if err := r.retunable(next); err != nil {
			b.mu.Unlock()
			return fmt.Errorf("circuitbreaker: Tuning.Policy: %w", err)
		}
	}
	b.set.cooldown, b.set.maxCooldown, b.set.multiplier = set.cooldown, set.maxCooldown, set.multiplier
	b.set.maxProbes, b.set.lease = set.maxProbes, set.lease
	if set.maxCooldown == 0 {
		b.cooldown = set.cooldown
	} else {
		b.cooldown = min(max(b.cooldown, set.cooldown), set.maxCooldown)
	}
	if r != nil {
		r.retune(next)
	}
	var kept Counts
	if stateOf(b.word.Load()) == Closed {
		kept = countsOf(b.tracker)
		if kept.Calls == 0 && kept.ConsecutiveFailures > 0 {
			kept.Calls, kept.Failures = kept.ConsecutiveFailures, kept.ConsecutiveFailures
		}
	}
	if b.tunes != nil {
		// Queued with mu held, so that the events are in the order the
		// changes were applied; delivered after unlocking.
		b.tunes.push(observe.Event{Source: observe.Breaker, Name: b.set.name, Kind: observe.Tuned,
			Calls: kept.Calls, Failures: kept.Failures})
	}
	b.mu.Unlock()
	if b.tunes != nil {
		b.tunes.flush()
	}
	return nil
}

// retuner is a built-in [Tracker] whose settings can change in place,
// keeping its counts (see [Breaker.Tune]). Both methods are called with
// the breaker's lock held.
type retuner interface {
	// retunable reports why next, a fresh tracker, cannot give its
	// settings to this one; nil if it can.
	retunable(next Tracker) error
	// retune takes the settings of next, which retunable accepted.
	retune(next Tracker)
}

// otherKind is the error of a Tuning.Policy of another kind than the
// breaker's policy (named want).
func otherKind(want string, next Tracker) error {
	return fmt.Errorf("must be a %s, as the breaker's policy is (got %s)", want, policyName(next))
}

// policyName names the Policy that made t, as its user wrote it: the
// built-ins by their type's name, any other by its tracker's type.
func policyName(t Tracker) string {
	switch t.(type) {
	case *consecutive:
		return "a Consecutive"
	case *failureRate:
		return "a FailureRate"
	case *slowCalls:
		return "a SlowCalls"
	case *successRate:
		return "a SuccessRate"
	case *anyTracker:
		return "an Any"
	case *tripFunc:
		return "a TripFunc"
	}
	return fmt.Sprintf("a policy of its own (tracker %T)", t)
}

func (c *consecutive) retunable(next Tracker) error {
	if _, ok := next.(*consecutive); !ok {
		return otherKind("Consecutive", next)
	}
	return nil
}

// retune keeps the run of failures: the next failure is judged by the new
// Failures.
func (c *consecutive) retune(next Tracker) {
	n := next.(*consecutive)
	c.failures, c.successes = n.failures, n.successes
}

func (f *failureRate) retunable(next Tracker) error {
	n, ok := next.(*failureRate)
	if !ok {
		return otherKind("FailureRate", next)
	}
	return sameKind("FailureRate.Window", f.w, n.w)
}

func (f *failureRate) retune(next Tracker) {
	n := next.(*failureRate)
	f.ratio = n.ratio
	if f.fast != nil {
		f.fast.retune(n.w, n.ratio)
		return
	}
	f.w.retune(n.w)
	f.setBusy()
}

func (s *slowCalls) retunable(next Tracker) error {
	n, ok := next.(*slowCalls)
	if !ok {
		return otherKind("SlowCalls", next)
	}
	return sameKind("SlowCalls.Window", s.w, n.w)
}

func (s *slowCalls) retune(next Tracker) {
	n := next.(*slowCalls)
	s.ratio, s.threshold = n.ratio, n.threshold
	s.w.retune(n.w)
}

func (a *anyTracker) retunable(next Tracker) error {
	n, ok := next.(*anyTracker)
	if !ok || len(n.ts) != len(a.ts) {
		return fmt.Errorf("must be an Any of %d policies, as the breaker's policy is (got %s)", len(a.ts), policyName(next))
	}
	for i, t := range a.ts {
		r, ok := t.(retuner)
		if !ok {
			return fmt.Errorf("Any policy %d (tracker %T) cannot change while the breaker runs", i, t)
		}
		if err := r.retunable(n.ts[i]); err != nil {
			return fmt.Errorf("Any policy %d: %w", i, err)
		}
	}
	return nil
}

func (a *anyTracker) retune(next Tracker) {
	n := next.(*anyTracker)
	for i, t := range a.ts {
		t.(retuner).retune(n.ts[i])
	}
}

func (s *successRate) retunable(next Tracker) error {
	n, ok := next.(*successRate)
	if !ok {
		return otherKind("SuccessRate", next)
	}
	r, ok := s.Tracker.(retuner)
	if !ok {
		return fmt.Errorf("SuccessRate.Trip (tracker %T) cannot change while the breaker runs", s.Tracker)
	}
	if err := r.retunable(n.Tracker); err != nil {
		return fmt.Errorf("SuccessRate.Trip: %w", err)
	}
	return nil
}

func (s *successRate) retune(next Tracker) {
	n := next.(*successRate)
	s.probes, s.ratio = n.probes, n.ratio
	s.Tracker.(retuner).retune(n.Tracker)
}

// sameKind reports an error unless the windows w and n are both count
// windows or both time windows: a window cannot change kind in place
// (a time window counts successes without the breaker's lock, a count
// window does not).
func sameKind(field string, w, n *window) error {
	switch {
	case w.timed() && !n.timed():
		return fmt.Errorf("%s cannot change from a time window to a count window while the breaker runs", field)
	case !w.timed() && n.timed():
		return fmt.Errorf("%s cannot change from a count window to a time window while the breaker runs", field)
	}
	return nil
}

// retune takes the size, shape and MinCalls of n, a window of the same
// kind, keeping what the new shape can hold: a count window its most
// recent calls, up to the new size; a time window its buckets if their
// width and number are unchanged, nothing otherwise.
func (w *window) retune(n *window) {
	w.minCalls = n.minCalls
	if !w.timed() {
		w.resize(len(n.ring))
		return
	}
	if w.width == n.width && len(w.buckets) == len(n.buckets) {
		return
	}
	w.buckets, w.width = n.buckets, n.width
	w.reset()
	w.head = w.index(w.mono())
}

// resize makes a count window hold size calls, keeping the most recent
// ones, up to size.
func (w *window) resize(size int) {
	if size == len(w.ring) {
		return
	}
	keep, old := min(w.n, size), len(w.ring)
	ring := make([]uint8, size)
	w.calls, w.failures, w.slow = 0, 0, 0
	for i := range keep {
		f := w.ring[(w.next-keep+i+old)%old]
		ring[i] = f
		w.calls++
		w.failures += int(f & flagFailure)
		w.slow += int(f&flagSlow) >> 1
	}
	w.ring, w.n, w.next = ring, keep, keep%size
}

// retune takes the shape of n, the new window, and the new ratio: with
// the same bucket width and number, the buckets and the successes counted
// without a lock are kept; otherwise the window starts empty, as after
// reset. Called with the breaker's lock held.
func (f *fastWindow) retune(n *window, ratio float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.minCalls, f.ratio = n.minCalls, ratio
	if f.w.width != n.width || len(f.w.buckets) != len(n.buckets) {
		for i := range f.stripes {
			f.stripes[i].n.Store(0)
		}
		f.stamps = [len(f.stamps)]stamped{}
		f.w.retune(n)
		f.lead = min(time.Duration(f.w.width)/64, 10*time.Millisecond)
		f.stop()
	} else {
		f.w.retune(n)
	}
	f.publish()
}
