package circuitbreaker

import (
	"errors"
	"fmt"

	"github.com/rampart-go/rampart/clock"
)

// Any returns a [Policy] that trips or re-opens when any of policies does
// and closes when all do: Any(FailureRate{}, SlowCalls{}) is
// resilience4j's breaker. A nil policy, or none, is an error.
func Any(policies ...Policy) Policy { return anyPolicy(policies) }

type anyPolicy []Policy

func (a anyPolicy) NewTracker() (Tracker, error) {
	if len(a) == 0 {
		return nil, errors.New("circuitbreaker: Any needs at least one policy")
	}
	t := &anyTracker{ts: make([]Tracker, len(a))}
	for i, p := range a {
		if p == nil {
			return nil, fmt.Errorf("circuitbreaker: Any policy %d is nil", i)
		}
		pt, err := newTracker(fmt.Sprintf("Any policy %d", i), p)
		if err != nil {
			return nil, fmt.Errorf("%w (Any policy %d)", err, i)
		}
		t.ts[i] = pt
		t.timing = max(t.timing, timingOf(pt))
	}
	return t, nil
}

type anyTracker struct {
	ts     []Tracker
	timing timing
	// decider is the first tracker whose judgement made the last trip or
	// re-open, asked for its reason by TripCause.
	decider Tracker
}

func (a *anyTracker) timingNeeded() timing { return a.timing }

func (a *anyTracker) wantsSuccess() bool {
	for _, t := range a.ts {
		if wanterOf(t).wantsSuccess() {
			return true
		}
	}
	return false
}

func (a *anyTracker) Record(c Call) bool {
	a.decider = nil
	for _, t := range a.ts {
		if t.Record(c) && a.decider == nil { // every policy sees every outcome
			a.decider = t
		}
	}
	return a.decider != nil
}

func (a *anyTracker) Probe(c Call, p Probes) Verdict {
	all := VerdictClose
	a.decider = nil
	for _, t := range a.ts {
		switch t.Probe(c, p) {
		case VerdictReopen:
			all = VerdictReopen
			if a.decider == nil {
				a.decider = t
			}
		case VerdictPending:
			if all == VerdictClose {
				all = VerdictPending
			}
		}
	}
	return all
}

// TripCause is the reason of the policy that decided the last trip or
// re-open, if it gives one.
func (a *anyTracker) TripCause() error { return tripCauseOf(a.decider) }

func (a *anyTracker) Reset(s State) {
	for _, t := range a.ts {
		t.Reset(s)
	}
}

// UseClock gives the breaker's clock to every policy that reads it.
func (a *anyTracker) UseClock(c clock.Clock) {
	for _, t := range a.ts {
		giveClock(t, c)
	}
}

func (a *anyTracker) Counts() Counts {
	var c Counts
	for _, t := range a.ts {
		tc := countsOf(t)
		c.ConsecutiveFailures = max(c.ConsecutiveFailures, tc.ConsecutiveFailures)
		c.Calls = max(c.Calls, tc.Calls)
		c.Failures = max(c.Failures, tc.Failures)
		c.SlowCalls = max(c.SlowCalls, tc.SlowCalls)
	}
	return c
}
