package circuitbreaker

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/observe"
)

const (
	// DefaultResetTimeout is the cool-down when Config.ResetTimeout is zero.
	DefaultResetTimeout = 30 * time.Second
	// DefaultProbeLease is the probe lease when Config.ProbeLease is zero.
	DefaultProbeLease = time.Minute
	// DefaultResetTimeoutMultiplier is Config.ResetTimeoutMultiplier when
	// zero.
	DefaultResetTimeoutMultiplier = 2.0

	// Immediate, as Config.ResetTimeout, is no cool-down: the next call
	// after a trip is a probe.
	Immediate time.Duration = -1
	// Forever, as Config.ResetTimeout, keeps a tripped breaker Open until
	// [Breaker.Reset] or a [Switch]; as [OpenError.RetryAfter], it means
	// no probe will be admitted by itself.
	Forever time.Duration = math.MaxInt64

	// maxProbesLimit bounds Config.MaxProbes.
	maxProbesLimit = 1024
)

// Config configures a [Breaker]. Every zero field selects a documented
// default: Config{} trips after five consecutive failures, cools down for
// 30 seconds, then admits one probe.
type Config struct {
	// Name names the breaker in transitions, rejections and snapshots.
	// Empty means unnamed.
	Name string
	// Policy decides when the breaker trips and when probes close it.
	// nil means [Consecutive]{}.
	Policy Policy
	// ResetTimeout is the cool-down: how long the breaker stays Open
	// before it admits a probe. Zero means [DefaultResetTimeout];
	// [Immediate] and [Forever] are accepted, other negatives are errors.
	ResetTimeout time.Duration
	// MaxResetTimeout, when non-zero, caps a cool-down that grows on each
	// consecutive re-open and restarts on close; it must be >= a positive,
	// finite ResetTimeout. Zero means a constant cool-down.
	MaxResetTimeout time.Duration
	// ResetTimeoutMultiplier is the growth factor of the cool-down; it
	// needs MaxResetTimeout. Zero means [DefaultResetTimeoutMultiplier];
	// otherwise finite and >= 1.
	ResetTimeoutMultiplier float64
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
	// [context.Background]) and every call's outcome, once, whatever the
	// path: each rejection, and each [Permit] finished (by the layers,
	// [Run] or by hand), with the outcome it was finished with, whether
	// or not the breaker could still count it (see [Permit]). The layers,
	// Run and [Permit.DoneContext] report with the call's context; the
	// other Permit methods and [Breaker.TryAcquire] with
	// [context.Background]. An [observe.Binder] is bound once, by
	// New, with the breaker's Name, and the breaker reports to the
	// Observer its Bind returns.
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
		cooldown:    orDefault(c.ResetTimeout, DefaultResetTimeout),
		maxCooldown: c.MaxResetTimeout,
		multiplier:  c.ResetTimeoutMultiplier,
		maxProbes:   orDefault(c.MaxProbes, 1),
		lease:       orDefault(c.ProbeLease, DefaultProbeLease),
		isFailure:   c.IsFailure,
		name:        c.Name,
		async:       c.AsyncListeners,
		onPanic:     c.ListenerPanic,
		clock:       c.Clock,
		observer:    c.bind(),
		success:     observe.Event{Source: observe.Breaker, Name: c.Name, Kind: observe.Success},
	}
	switch {
	case c.ResetTimeout < 0 && c.ResetTimeout != Immediate:
		return s, fmt.Errorf("circuitbreaker: ResetTimeout must be >= 0 (or Immediate), got %s", durationString(c.ResetTimeout))
	case c.MaxProbes < 0 || c.MaxProbes > maxProbesLimit:
		return s, fmt.Errorf("circuitbreaker: MaxProbes must be in [0, %d], got %d", maxProbesLimit, c.MaxProbes)
	case c.ProbeLease < 0:
		return s, fmt.Errorf("circuitbreaker: ProbeLease must be >= 0, got %s", durationString(c.ProbeLease))
	case c.MaxResetTimeout < 0:
		return s, fmt.Errorf("circuitbreaker: MaxResetTimeout must be >= 0, got %s", durationString(c.MaxResetTimeout))
	case c.MaxResetTimeout == 0 && c.ResetTimeoutMultiplier != 0:
		return s, fmt.Errorf("circuitbreaker: ResetTimeoutMultiplier needs MaxResetTimeout, got multiplier %v without it", c.ResetTimeoutMultiplier)
	case c.ResetTimeoutMultiplier != 0 && !(c.ResetTimeoutMultiplier >= 1 && !math.IsInf(c.ResetTimeoutMultiplier, 1)):
		return s, fmt.Errorf("circuitbreaker: ResetTimeoutMultiplier must be finite and >= 1, got %v", c.ResetTimeoutMultiplier)
	}
	if c.MaxResetTimeout != 0 {
		if s.cooldown == Immediate || s.cooldown == Forever {
			got := durationString(s.cooldown)
			if s.cooldown == Immediate {
				got = "Immediate"
			}
			return s, fmt.Errorf("circuitbreaker: MaxResetTimeout needs a positive, finite ResetTimeout, got %s", got)
		}
		if c.MaxResetTimeout < s.cooldown {
			return s, fmt.Errorf("circuitbreaker: MaxResetTimeout must be >= ResetTimeout (%s), got %s", durationString(s.cooldown), durationString(c.MaxResetTimeout))
		}
		s.multiplier = orDefault(s.multiplier, DefaultResetTimeoutMultiplier)
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
// Forever by its name, anything else as [time.Duration.String] does, so
// that a -1ns given to a field where it means nothing special reads as
// -1ns, not as Immediate (which only ResetTimeout gives a meaning).
func durationString(d time.Duration) string {
	if d == Forever {
		return "Forever"
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
			Calls: tr.Counters.Calls, Failures: tr.Counters.Failures,
		})
	}
}
