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
	// DefaultResetTimeoutMultiplier is the growth factor of the cool-down
	// when Config.MaxResetTimeout is set and the multiplier is zero.
	DefaultResetTimeoutMultiplier = 2.0

	// Immediate, as Config.ResetTimeout, is no cool-down at all: the next
	// call after a trip is a probe. (A zero field selects the default.)
	// It prints as "Immediate".
	Immediate time.Duration = -1
	// Forever, as Config.ResetTimeout, keeps a tripped breaker Open until
	// [Breaker.Reset] or a [Switch] changes it. It is also the
	// [OpenError.RetryAfter] of a breaker that will not admit a probe by
	// itself. It prints as
	// "Forever".
	Forever time.Duration = math.MaxInt64

	// maxProbesLimit bounds Config.MaxProbes.
	maxProbesLimit = 1024
)

// Config configures a [Breaker]. Every zero field selects a documented
// default, so Config{} is a working breaker: five consecutive failures trip
// it, it cools down for 30 seconds, then admits one probe. [New] validates
// it (a bad field is an error naming it) and keeps a copy.
type Config struct {
	// Name names the breaker in its transitions, rejections, snapshots and
	// logged listener panics. Empty means unnamed.
	Name string

	// Policy decides when the breaker trips and when probes close it.
	// nil means [Consecutive]{}.
	Policy Policy

	// ResetTimeout is the cool-down: how long the breaker stays Open
	// before it admits a probe. Zero means [DefaultResetTimeout] (30s);
	// [Immediate] and [Forever] are accepted; other negative values are an
	// error.
	ResetTimeout time.Duration

	// MaxResetTimeout, when non-zero, makes the cool-down grow: each
	// consecutive re-open from HalfOpen multiplies the previous cool-down
	// by ResetTimeoutMultiplier, up to MaxResetTimeout (which may be
	// Forever); closing the breaker starts again from ResetTimeout. It
	// must be >= ResetTimeout, which must then be positive and finite.
	// Zero means a constant cool-down.
	MaxResetTimeout time.Duration

	// ResetTimeoutMultiplier is the growth factor of the cool-down; it
	// needs MaxResetTimeout. Zero means [DefaultResetTimeoutMultiplier]
	// (2); otherwise it must be finite and >= 1.
	ResetTimeoutMultiplier float64

	// MaxProbes is how many probes may be in flight at once in HalfOpen.
	// Zero means 1; at most 1024.
	MaxProbes int

	// ProbeLease bounds how long a probe holds its slot: after it, the
	// slot goes to the next caller and the probe's outcome is discarded.
	// Zero means [DefaultProbeLease] (one minute); negative is an error.
	ProbeLease time.Duration

	// IsFailure, when set, is asked about every error the classification
	// counts as a failure ([Permit.Done], [Permit.DoneContext], the layers,
	// [Run]); returning false makes the error count as a success (it still
	// reaches the caller), also toward closing from HalfOpen. It must be
	// safe for concurrent use. nil counts every such error as a failure.
	// A panic in it is recorded as the failure [ErrPanicked] and continues
	// to the caller.
	IsFailure func(err error) bool

	// AsyncListeners, when true, runs the listeners of [Breaker.Subscribe]
	// on a goroutine that is started when a transition is queued and exits
	// once the queue is empty, never on a caller's: a slow listener cannot
	// slow a call. Delivery is still in order and one at a time. The queue
	// is not bounded: while a listener blocks, each transition adds one
	// [Transition] to it. synctest.Wait waits for delivery, unless a
	// listener blocks. False (the default) calls listeners on the
	// goroutine that caused the transition, before its call returns.
	AsyncListeners bool

	// ListenerPanic, when set, is called with the value and stack of each
	// panic a listener raises; delivery then goes on. nil logs the panic
	// and its stack with the standard [log] package.
	ListenerPanic func(value any, stack []byte)

	// Switch, when set, can force this breaker open or closed. One Switch
	// may control many breakers.
	Switch *Switch

	// Clock, when set, is the breaker's time: every reading (cool-downs,
	// time windows, slow-call latencies, probe leases, the time of a
	// [Transition]) and every timer goes through it, so that recorded
	// traffic can be replayed on virtual time. Durations are measured
	// only as differences of its Monotonic readings, so a step of its
	// wall time moves no cool-down and no window. nil means the system's
	// clock, read directly: no interface call and no allocation per call.
	// Its AfterFunc must call f on another goroutine, never before it
	// returns, as the Clock contract says.
	// Tests do not need it: testing/synctest gives the system's clock
	// virtual time.
	Clock clock.Clock

	// Observer, when set, is told about every transition of the breaker
	// (an [observe.Transition] event with the states by their names and
	// the cause of a trip), delivered as a listener of [Breaker.Subscribe]
	// is: in order, after the lock is released, asynchronously with
	// AsyncListeners, and always with [context.Background]. It is also
	// told about the outcome of every call through the breaker's layers
	// and [Run], with the call's context, before the call returns: an
	// [observe.Rejected] event for a call the breaker refused, and
	// [observe.Success], [observe.Failure] or [observe.Ignored] for a call
	// made, as the breaker counted it (after the classifier and
	// IsFailure), with the call's duration when the policy measures
	// latency (two more clock readings per call, taken only then). Calls
	// made with a [Permit] by hand report no outcome. See package observe.
	Observer observe.Observer
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
		observer:    c.Observer,
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
			return s, fmt.Errorf("circuitbreaker: MaxResetTimeout needs a positive, finite ResetTimeout, got %s", durationString(s.cooldown))
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

// durationString formats a duration, naming the special values
// [Immediate] and [Forever].
func durationString(d time.Duration) string {
	switch d {
	case Immediate:
		return "Immediate"
	case Forever:
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
		})
	}
}
