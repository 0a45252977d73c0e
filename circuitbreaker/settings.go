package circuitbreaker

import (
	"context"
	"time"

	"github.com/rampart-go/rampart/observe"
)

// Tuning is the part of a breaker's [Config] that [Breaker.Tune] changes
// while the breaker runs: its cool-down schedule and its probes. Each
// field means what the Config field of the same name means, zero values
// and defaults included.
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
}

// Tune changes b's cool-down schedule and probe settings while calls flow,
// keeping its state, or returns the error circuitbreaker.New would return
// for the same fields, changing nothing. Safe for concurrent use, and
// free for calls: the settings it changes are read only with the
// breaker's lock held, never on the Closed path.
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
//   - the policy, its counts and every other setting are kept.
//
// The change is reported to the breaker's Observer as an event of kind
// [observe.Tuned].
func (b *Breaker) Tune(t Tuning) error {
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
	b.mu.Lock()
	b.setUp()
	b.set.cooldown, b.set.maxCooldown, b.set.multiplier = set.cooldown, set.maxCooldown, set.multiplier
	b.set.maxProbes, b.set.lease = set.maxProbes, set.lease
	if set.maxCooldown == 0 {
		b.cooldown = set.cooldown
	} else {
		b.cooldown = min(max(b.cooldown, set.cooldown), set.maxCooldown)
	}
	b.mu.Unlock()
	if obs := b.set.observer; obs != nil {
		obs.Observe(context.Background(), observe.Event{Source: observe.Breaker, Name: b.set.name, Kind: observe.Tuned})
	}
	return nil
}
