package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// Candidate is one configuration to replay a trace through: the layers of
// a client of one dependency, in the order of the package rampart
// documentation (retries outside the breaker, the per-attempt timeout
// inside it). Every part is optional; the zero Candidate sends every call
// as recorded.
type Candidate struct {
	// Name names the candidate in results; it must not be empty.
	Name string
	// Breaker configures a circuit breaker. Nil means none. Its Clock must
	// be nil (the replay sets its own), and so must AsyncListeners be
	// false, and Switch nil.
	Breaker *circuitbreaker.Config
	// Retry configures retries. Nil means none.
	Retry *Retry
	// Timeout is the per-attempt timeout, inside the breaker, so a slow
	// attempt is a failure it counts. Zero means none; negative is an
	// error.
	Timeout time.Duration
}

// Retry configures a candidate's retries.
type Retry struct {
	// MaxAttempts bounds the calls per request, the first included; as
	// retry.Config.MaxAttempts (zero means 3).
	MaxAttempts int
	// Backoff is the exponential schedule between attempts, as
	// [retry.Exponential]. Its Rand must be nil: the replay draws the
	// jitter from a source seeded with [Config.Seed], so a replay is
	// reproducible.
	Backoff retry.Exponential
	// Budget configures the retry budget, which bounds retries to a share
	// of recent calls; its Clock must be nil (the replay sets its own).
	// Nil means the retry layer's own default budget (package budget's
	// defaults: 20% of recent calls plus 10 retries a second), as in
	// [retry.Config], unless NoBudget is set.
	Budget *budget.Config
	// NoBudget retries with no budget ([budget.Always]): retries are then
	// bounded only by MaxAttempts. Budget must be nil when it is set.
	NoBudget bool
}

// errFailure is what the simulated dependency returns for a call recorded
// as a failure.
type errFailure struct{ class string }

func (e *errFailure) Error() string {
	if e.class == "" {
		return "sim: recorded failure"
	}
	return "sim: recorded failure: " + e.class
}

// errIgnored is what the simulated dependency returns for a call recorded
// as ignored; the candidate's breaker counts it neither way.
type errIgnored struct{ class string }

func (e *errIgnored) Error() string {
	if e.class == "" {
		return "sim: recorded ignored call"
	}
	return "sim: recorded ignored call: " + e.class
}

// classify judges an attempt for a candidate's breaker as a breaker
// without a classifier does, but for a recorded ignored call.
func classify(_ struct{}, err error) rampart.Outcome {
	if _, ok := errors.AsType[*errIgnored](err); ok {
		return rampart.Ignored
	}
	return circuitbreaker.Classify(err) // no caller context: the replay's callers never cancel
}

// stack is a candidate's layers built over the simulated dependency.
type stack struct {
	svc     rampart.Service[*call, struct{}]
	breaker *circuitbreaker.Breaker
}

// build builds c's layers over dep, on the scheduler's clock.
func (c *Candidate) build(s *scheduler, seed uint64, dep rampart.Service[*call, struct{}]) (stack, error) {
	bad := func(err error) (stack, error) {
		return stack{}, fmt.Errorf("candidate %q: %w", c.Name, err)
	}
	if c.Name == "" {
		return stack{}, errors.New("sim: a candidate's Name must not be empty")
	}
	var st stack
	b := rampart.NewBuilder[*call, struct{}]()
	if r := c.Retry; r != nil {
		if r.Backoff.Rand != nil {
			return bad(errors.New("Retry.Backoff.Rand must be nil: the replay seeds its own"))
		}
		bo := r.Backoff
		bo.Rand = rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15)).Float64
		backoff, err := retry.NewExponential(bo)
		if err != nil {
			return bad(err)
		}
		cfg := retry.Config[*call, struct{}]{MaxAttempts: r.MaxAttempts, Backoff: backoff, Clock: s}
		switch {
		case r.NoBudget && r.Budget != nil:
			return bad(errors.New("Retry.Budget must be nil with Retry.NoBudget"))
		case r.NoBudget:
			cfg.Budget = budget.Always
		case r.Budget != nil:
			if r.Budget.Clock != nil {
				return bad(errors.New("Retry.Budget.Clock must be nil: the replay sets its own"))
			}
			bc := *r.Budget
			bc.Clock = s
			bg, err := budget.New(bc)
			if err != nil {
				return bad(err)
			}
			cfg.Budget = bg
		}
		b = b.With(retry.NewLayer(cfg))
	}
	if c.Breaker != nil {
		switch {
		case c.Breaker.Clock != nil:
			return bad(errors.New("Breaker.Clock must be nil: the replay sets its own"))
		case c.Breaker.AsyncListeners:
			return bad(errors.New("Breaker.AsyncListeners must be false: the replay cannot follow listeners on other goroutines"))
		case c.Breaker.Switch != nil:
			return bad(errors.New("Breaker.Switch must be nil"))
		}
		bc := *c.Breaker
		bc.Clock = s
		if bc.Name == "" {
			bc.Name = c.Name
		}
		br, err := circuitbreaker.New(bc)
		if err != nil {
			return bad(err)
		}
		st.breaker = br
		b = b.Layer(circuitbreaker.NewLayer[*call, struct{}](br, classify))
	}
	switch {
	case c.Timeout < 0:
		//lint:ignore ST1005 the message names the field, after "candidate %q: "
		return bad(fmt.Errorf("Timeout must be 0 (none) or positive, got %v", c.Timeout))
	case c.Timeout > 0:
		b = b.With(timeout.NewLayer(timeout.Config[*call, struct{}]{Timeout: c.Timeout, Clock: s}))
	}
	svc, err := b.Build(dep)
	if err != nil {
		return bad(err)
	}
	st.svc = svc
	return st, nil
}

// dependency is the simulated dependency of one run: a call sleeps the
// recorded duration on the virtual clock, or until its context is done,
// and returns the recorded outcome.
func (r *run) dependency(ctx context.Context, c *call) (struct{}, error) {
	c.attempts++
	e := c.entry
	switch {
	case c.attempts > 1:
		// A retry meets the dependency as it is now: as the latest
		// recorded call with a known outcome found it.
		e = r.guess()
		r.res.RetriesSent++
	case e.Outcome == record.Refused:
		// Never reached the dependency live: as last recorded.
		e = r.guess()
		c.unknown = true
	}
	r.res.Sent++
	r.series.at(r.s.Monotonic()).Sent++
	if err := r.s.Sleep(ctx, e.Duration); err != nil {
		return struct{}{}, context.Cause(ctx)
	}
	switch e.Outcome {
	case record.Failure:
		return struct{}{}, &errFailure{class: e.Class}
	case record.Ignored:
		return struct{}{}, &errIgnored{class: e.Class}
	}
	return struct{}{}, nil
}
