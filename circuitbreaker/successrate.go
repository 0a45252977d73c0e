package circuitbreaker

import (
	"cmp"
	"fmt"

	"github.com/rampart-go/rampart/clock"
)

// DefaultProbeRatio is [SuccessRate].Ratio when zero.
const DefaultProbeRatio = 0.8

// SuccessRate is a [Policy] that closes a HalfOpen breaker once at least
// Ratio of Probes probes succeeded and re-opens it otherwise (the
// success-rate probing of the Tower circuit-breaker pull request); Trip
// decides when it trips. Probes may exceed MaxProbes.
type SuccessRate struct {
	// Trip decides when the breaker trips from Closed; nil means
	// [Consecutive]{}. Its own probe rule is not used.
	Trip Policy
	// Probes is how many probes are judged: zero means 10; at most 1e6.
	Probes int
	// Ratio is the ratio of Probes that must succeed, in (0, 1]. Zero
	// means [DefaultProbeRatio].
	Ratio float64
}

// NewTracker validates s and returns its state for one Breaker.
func (s SuccessRate) NewTracker() (Tracker, error) {
	if err := checkCount("SuccessRate.Probes", s.Probes); err != nil {
		return nil, err
	}
	ratio, err := checkRatio("SuccessRate.Ratio", s.Ratio, DefaultProbeRatio)
	if err != nil {
		return nil, err
	}
	trip := s.Trip
	if trip == nil {
		trip = Consecutive{}
	}
	t, err := newTracker("SuccessRate.Trip", trip)
	if err != nil {
		return nil, fmt.Errorf("%w (SuccessRate.Trip)", err)
	}
	return &successRate{Tracker: t, probes: cmp.Or(s.Probes, 10), ratio: ratio}, nil
}

// successRate is the Trip tracker with its probe rule replaced.
type successRate struct {
	Tracker
	probes int
	ratio  float64
}

func (s *successRate) Probe(_ Call, p Probes) Verdict {
	switch hit, miss := judge(p.Succeeded, p.Failed, s.probes, s.ratio); {
	case hit:
		return VerdictClose
	case miss:
		return VerdictReopen
	}
	return VerdictPending
}

// TripCause forwards the Trip tracker's reason for a trip on a success
// (Record and Reset are forwarded by embedding, the fast paths below). The
// probe rule of SuccessRate re-opens only on a failure.
func (s *successRate) TripCause() error { return tripCauseOf(s.Tracker) }

func (s *successRate) timingNeeded() timing { return timingOf(s.Tracker) }

func (s *successRate) wantsSuccess() bool { return wanterOf(s.Tracker).wantsSuccess() }

// countSuccess forwards to the Trip tracker, if it counts successes
// without the breaker's lock.
func (s *successRate) countSuccess() bool {
	c, ok := s.Tracker.(successCounter)
	return ok && c.countSuccess()
}

// UseClock gives the breaker's clock to the Trip tracker if it reads it.
func (s *successRate) UseClock(c clock.Clock) { giveClock(s.Tracker, c) }

// Counts returns the Trip tracker's counts.
func (s *successRate) Counts() Counts { return countsOf(s.Tracker) }
