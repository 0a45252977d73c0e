package circuitbreaker

import (
	"cmp"
	"sync/atomic"

	"github.com/rampart-go/rampart"
)

// DefaultFailures is [Consecutive].Failures when zero.
const DefaultFailures = 5

// Consecutive is the default [Policy], the classic breaker of Nygard's
// "Release It!": it trips after Failures consecutive failures, and in
// HalfOpen closes after Successes probe successes and re-opens on any
// probe failure.
type Consecutive struct {
	// Failures is how many consecutive failures trip the breaker.
	// Zero means [DefaultFailures]; at most 1,000,000.
	Failures int
	// Successes is how many consecutive probe successes close the breaker
	// from HalfOpen. Zero means 1; at most 1,000,000.
	Successes int
}

// NewTracker validates c and returns its state for one Breaker.
func (c Consecutive) NewTracker() (Tracker, error) {
	if err := checkCount("Consecutive.Failures", c.Failures); err != nil {
		return nil, err
	}
	if err := checkCount("Consecutive.Successes", c.Successes); err != nil {
		return nil, err
	}
	return &consecutive{
		failures:  cmp.Or(c.Failures, DefaultFailures),
		successes: cmp.Or(c.Successes, 1),
	}, nil
}

type consecutive struct {
	// run is the current run of failures. It is written only under the
	// breaker's lock (Record, Reset) and read without it by wantsSuccess;
	// an atomic makes that read race-free. Every Closed success reads it,
	// so the padding gives it a cache line of its own: a neighbouring
	// object written per call would otherwise make parallel successes
	// contend (false sharing).
	_   [cacheLine]byte
	run atomic.Int64
	_   [cacheLine - 8]byte

	failures, successes int
}

func (c *consecutive) timingNeeded() timing { return timingNone }

// wantsSuccess is false while the run is zero: a success then changes
// nothing. A failure racing with this load is ordered after the success,
// which is a valid linearization.
func (c *consecutive) wantsSuccess() bool { return c.run.Load() != 0 }

func (c *consecutive) Record(call Call) bool {
	if call.Outcome == rampart.Success {
		c.run.Store(0)
		return false
	}
	n := c.run.Load() + 1
	c.run.Store(n)
	return n >= int64(c.failures)
}

func (c *consecutive) Probe(call Call, p Probes) Verdict {
	return consecutiveProbes(call, p, c.successes)
}

// consecutiveProbes is the "N consecutive probe successes" rule: any probe
// failure re-opens, and successes closes once that many probes succeeded
// (they are consecutive, since a failure would have re-opened).
func consecutiveProbes(call Call, p Probes, successes int) Verdict {
	if call.Outcome == rampart.Failure {
		return VerdictReopen
	}
	if p.Succeeded >= successes {
		return VerdictClose
	}
	return VerdictPending
}

func (c *consecutive) Reset(State) { c.run.Store(0) }

func (c *consecutive) Counts() Counts {
	return Counts{ConsecutiveFailures: int(c.run.Load())}
}
