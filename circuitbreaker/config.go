package circuitbreaker

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/observe"
)

const (
	// DefaultCoolDown is the cool-down when Config.CoolDown is zero.
	DefaultCoolDown = 30 * time.Second
	// DefaultProbeLease is the probe lease when Config.ProbeLease is zero.
	DefaultProbeLease = time.Minute
	// DefaultCoolDownMultiplier is Config.CoolDownMultiplier when
	// zero.
	DefaultCoolDownMultiplier = 2.0

	// Immediate, as Config.CoolDown, is no cool-down: the next call
	// after a trip is a probe.
	Immediate time.Duration = -1

	// maxProbesLimit bounds Config.MaxProbes.
	maxProbesLimit = 1024
)

// Config configures a [Breaker]. Every zero field selects a documented
// default: Config{} trips after five consecutive failures, cools down for
// 30 seconds, then admits one probe.
type Config struct {
	// Name names the breaker in transitions, refusals and snapshots.
	// Empty means unnamed.
	Name string
	// Policy decides when the breaker trips and when probes close it.
	// nil means [Consecutive]{}.
	Policy Policy
	// CoolDown is the cool-down: how long the breaker stays Open
	// before it admits a probe. Zero means [DefaultCoolDown];
	// [Immediate] and [rampart.Forever] are accepted, other negatives are errors.
	CoolDown time.Duration
	// MaxCoolDown, when non-zero, caps a cool-down that grows on each
	// consecutive re-open and restarts on close; it must be >= a positive,
	// finite CoolDown. Zero means a constant cool-down.
	MaxCoolDown time.Duration
	// CoolDownMultiplier is the growth factor of the cool-down; it
	// needs MaxCoolDown. Zero means [DefaultCoolDownMultiplier];
	// otherwise finite and >= 1.
	CoolDownMultiplier float64
	// MaxProbes is how many probes may be in flight at once in HalfOpen.
	// Zero means 1; at most 1024.
	MaxProbes int
	// ProbeLease bounds how long a probe holds its slot; after it, the
	// probe's outcome is discarded. Zero means [DefaultProbeLease];
	// negative is an error.
	ProbeLease time.Duration
	// IsFailure, when set, is asked about every error classified as a
	// failure; false makes it count as a success (the caller still gets
	// it). nil counts every such error. It must be safe for concurrent
	// use. A panic in it finishes the permit as the failure [ErrPanicked]
	// and is not recovered: it goes on up the caller's stack.
	IsFailure func(err error) bool
	// AsyncListeners, when true, runs listeners on a goroutine of the
	// breaker (alive only while transitions are queued; the queue is
	// unbounded), never on a caller's. False runs them on the goroutine
	// that caused the transition, before its call returns.
	AsyncListeners bool
	// ListenerPanic, when set, gets the value and stack of each panic a
	// listener raises. nil logs them with the standard [log] package.
	ListenerPanic func(value any, stack []byte)
	// Switch, when set, can force this breaker open or closed.
	Switch *Switch
	// Clock, when set, gives every time reading and timer of the breaker
	// (to replay recorded traffic on virtual time); durations come only
	// from its Monotonic readings. nil means the system's clock, read
	// directly. testing/synctest needs no Clock.
	Clock clock.Clock
	// Observer, when set, gets each transition (as a listener would, with
	// [context.Background]; and, as no listener does, each new end of an
	// Open that [Breaker.ApplyRemote] moves, as a transition from open to
	// open whose Duration is the rest of the Open) and every call's
	// outcome, once, whatever the
	// path: each refusal, and each [Permit] finished (by the layers,
	// [Run] or by hand), with the outcome it was finished with, whether
	// or not the breaker could still count it (see [Permit]). The layers,
	// Run and [Permit.DoneContext] report with the call's context; the
	// other Permit methods and [Breaker.TryAcquire] with
	// [context.Background]. An [observe.Binder] is bound once, by
	// New, with the breaker's Name, and the breaker reports to the
	// Observer its Bind returns; one that says it does not want
	// [observe.Success] events ([observe.Wants]) is not told of
	// successes, which then cost what they cost without an Observer.
	Observer observe.Observer

	// member is set by a Group in the Config of its breakers.
	member *member
}

// settings are a validated Config with defaults filled in.
type settings struct {
	cooldown, maxCooldown time.Duration
	multiplier            float64
	maxProbes             int
	lease                 time.Duration
	isFailure             func(error) bool
	name                  string
	async                 bool
	onPanic               func(any, []byte)
	clock                 clock.Clock // nil: the system's clock
	observer              observe.Observer
	// successes is observer when it wants Success events (observe.Wants),
	// else nil: the success paths report to it.
	successes observe.Observer
	// success is the event of an untimed success, built once: the
	// hottest event, copied from memory written long ago rather than
	// built on the stack for each call (whose piecewise stores the copy
	// into the call's arguments would wait for).
	success observe.Event
}

// member names the group and key of a Group's breaker, in its Config.
type member struct{ group, key string }

// bind binds c.Observer to the breaker: as a member of its group for a
// Group's breaker.
func (c Config) bind() observe.Observer {
	if c.member != nil {
		return observe.BindMember(c.Observer, observe.Breaker, c.member.group, c.member.key, c.Name)
	}
	return observe.Bind(c.Observer, observe.Breaker, c.Name)
}

// validate checks c and fills defaults. Errors name the field.
func (c Config) validate() (settings, error) {
	s := settings{
		cooldown:    cmp.Or(c.CoolDown, DefaultCoolDown),
		maxCooldown: c.MaxCoolDown,
		multiplier:  c.CoolDownMultiplier,
		maxProbes:   cmp.Or(c.MaxProbes, 1),
		lease:       cmp.Or(c.ProbeLease, DefaultProbeLease),
		isFailure:   c.IsFailure,
		name:        c.Name,
		async:       c.AsyncListeners,
		onPanic:     c.ListenerPanic,
		clock:       c.Clock,
		observer:    c.bind(),
		success:     observe.Event{Source: observe.Breaker, Name: c.Name, Kind: observe.Success},
	}
	if observe.Wants(s.observer, observe.Success) {
		s.successes = s.observer
	}
	if err := nilvalue.Field("circuitbreaker: Clock", c.Clock); err != nil {
		return s, err
	}
	switch {
	case c.CoolDown < 0 && c.CoolDown != Immediate:
		return s, fmt.Errorf("circuitbreaker: CoolDown must be >= 0 (or Immediate), got %s", durationString(c.CoolDown))
	case c.MaxProbes < 0 || c.MaxProbes > maxProbesLimit:
		return s, fmt.Errorf("circuitbreaker: MaxProbes must be in [0, %d], got %d", maxProbesLimit, c.MaxProbes)
	case c.ProbeLease < 0:
		return s, fmt.Errorf("circuitbreaker: ProbeLease must be >= 0, got %s", durationString(c.ProbeLease))
	case c.MaxCoolDown < 0:
		return s, fmt.Errorf("circuitbreaker: MaxCoolDown must be >= 0, got %s", durationString(c.MaxCoolDown))
	case c.MaxCoolDown == 0 && c.CoolDownMultiplier != 0:
		return s, fmt.Errorf("circuitbreaker: CoolDownMultiplier needs MaxCoolDown, got multiplier %v without it", c.CoolDownMultiplier)
	case c.CoolDownMultiplier != 0 && !(c.CoolDownMultiplier >= 1 && !math.IsInf(c.CoolDownMultiplier, 1)):
		return s, fmt.Errorf("circuitbreaker: CoolDownMultiplier must be finite and >= 1, got %v", c.CoolDownMultiplier)
	}
	if c.MaxCoolDown != 0 {
		if s.cooldown == Immediate || s.cooldown == rampart.Forever {
			got := durationString(s.cooldown)
			if s.cooldown == Immediate {
				got = "Immediate"
			}
			return s, fmt.Errorf("circuitbreaker: MaxCoolDown needs a positive, finite CoolDown, got %s", got)
		}
		if c.MaxCoolDown < s.cooldown {
			return s, fmt.Errorf("circuitbreaker: MaxCoolDown must be >= CoolDown (%s), got %s", durationString(s.cooldown), durationString(c.MaxCoolDown))
		}
		s.multiplier = cmp.Or(s.multiplier, DefaultCoolDownMultiplier)
	}
	if s.cooldown == Immediate {
		s.cooldown = 0
	}
	return s, nil
}

// next returns the cool-down that follows d on a consecutive re-open: d
// times the multiplier, capped at the maximum, without overflow. With a
// constant schedule it returns d.
func (s *settings) next(d time.Duration) time.Duration {
	if s.maxCooldown == 0 {
		return d
	}
	f := float64(d) * s.multiplier
	if f >= float64(s.maxCooldown) {
		return s.maxCooldown
	}
	return time.Duration(f)
}

// durationString formats a duration for a message about a bad value:
// [rampart.Forever] by its name, anything else as [time.Duration.String]
// does, so that a -1ns given to a field where it means nothing special
// reads as -1ns, not as Immediate (which only CoolDown gives a meaning).
func durationString(d time.Duration) string {
	if d == rampart.Forever {
		return "rampart.Forever"
	}
	return d.String()
}

// observeTransitions returns the listener that reports the transitions of
// a breaker named name to obs.
func observeTransitions(name string, obs observe.Observer) func(Transition) {
	return func(tr Transition) {
		obs.Observe(context.Background(), observe.Event{
			Source: observe.Breaker, Name: name, Kind: observe.Transition,
			From: tr.From.String(), To: tr.To.String(), Err: tr.Cause,
			Calls: tr.Counts.Calls, Failures: tr.Counts.Failures, Duration: tr.RetryAfter,
		})
	}
}
