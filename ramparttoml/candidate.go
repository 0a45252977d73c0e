package ramparttoml

import (
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/shadow"
	"github.com/rampart-go/rampart/sim"
)

// File is a settings file, checked: the replay's options and the
// candidates, in file order. Its methods only read it: safe for
// concurrent use while nothing changes its fields. A nil *File holds no
// candidate: Candidate returns an error saying so.
type File struct {
	// Replay is the [options] table, for a replay (rampart-sim).
	Replay sim.Config
	// Candidates are the [[candidate]] tables: at least one, each with a
	// name of its own.
	Candidates []Candidate
}

// Candidate is one [[candidate]] table: a stack's settings, as a replay
// ([Candidate.Sim]), a shadow ([Candidate.Shadow]) and a running program
// (its fields, given to the packages' Tune methods) take them. Its
// durations are [time.Duration]s; the values its pointers share with
// what Sim and Shadow return are not to be changed while in use.
type Candidate struct {
	// Name is the candidate's name = "...".
	Name string
	// Timeout is the per-attempt timeout (timeout = "1s"); zero for none.
	Timeout time.Duration
	// Breaker is the [candidate.breaker] table, nil without one: the
	// cool-down and probes, and the trip rule of its
	// [candidate.breaker.consecutive], failure_rate, slow_calls tables
	// (an Any of them when there are several) and probes table (a
	// SuccessRate around them). Its Policy is never nil: Consecutive{}
	// (what a nil Policy means to circuitbreaker.New) when no trip rule
	// is given, so that it is what the file means as a
	// circuitbreaker.Tuning's Policy too, where nil keeps the running
	// breaker's policy.
	Breaker *circuitbreaker.Config
	// Retry is the [candidate.retry] table, nil without one.
	Retry *sim.Retry
	// Concurrency is max of the [candidate.concurrency] table, the
	// number of calls that may run at once; zero without one. A replay
	// does not simulate it.
	Concurrency int
	// RateLimit is the [candidate.rate_limit] table (limit per second,
	// burst), nil without one. A replay does not simulate it.
	RateLimit *ratelimit.Tuning
}

// Sim returns the candidate as a replay takes it. Its Concurrency and
// RateLimit, which a replay does not simulate, are left out.
func (c Candidate) Sim() sim.Candidate {
	return sim.Candidate{Name: c.Name, Timeout: c.Timeout, Breaker: c.Breaker, Retry: c.Retry}
}

// Shadow returns the candidate's breaker as a shadow candidate, under the
// candidate's name, or an error if the candidate has no breaker. Its
// Timeout, Retry and limits are left out: a shadow only judges the live
// calls, as the live stack's own timeout and retries made them.
func (c Candidate) Shadow() (shadow.Candidate, error) {
	if c.Breaker == nil {
		return shadow.Candidate{}, fmt.Errorf("ramparttoml: candidate %q has no [candidate.breaker] table to shadow", c.Name)
	}
	return shadow.Candidate{Name: c.Name, Breaker: *c.Breaker}, nil
}

// Candidate returns the candidate named name, or, for an empty name, the
// file's only candidate; an error names what is missing.
func (f *File) Candidate(name string) (Candidate, error) {
	if f == nil {
		return Candidate{}, errors.New("ramparttoml: Candidate of a nil *File (read one with ramparttoml.Load or Parse)")
	}
	if name == "" {
		if len(f.Candidates) != 1 {
			return Candidate{}, fmt.Errorf("ramparttoml: the file has %d candidates: name one", len(f.Candidates))
		}
		return f.Candidates[0], nil
	}
	for _, c := range f.Candidates {
		if c.Name == name {
			return c, nil
		}
	}
	return Candidate{}, fmt.Errorf("ramparttoml: no candidate named %q", name)
}
