package circuitbreaker

import (
	"fmt"
	"math"
	"time"
)

const (
	// DefaultResetTimeout is the cool-down used when Config.ResetTimeout
	// is zero.
	DefaultResetTimeout = 30 * time.Second
	// DefaultProbeLease is the probe lease used when Config.ProbeLease is
	// zero.
	DefaultProbeLease = time.Minute
	// DefaultResetTimeoutMultiplier is the growth factor used when
	// Config.MaxResetTimeout is set and Config.ResetTimeoutMultiplier is
	// zero: the cool-down doubles on each consecutive re-open.
	DefaultResetTimeoutMultiplier = 2.0

	// Immediate, as Config.ResetTimeout, is a cool-down of zero: a tripped
	// breaker is ready for a probe at once, so the next call after a trip is
	// a probe (CB13). A literal zero cannot say this, because a zero field
	// selects [DefaultResetTimeout]; Immediate is the one negative duration
	// Config accepts.
	Immediate time.Duration = -1
	// Forever, as Config.ResetTimeout, keeps a tripped breaker Open until
	// [Breaker.Reset] or a [Switch] changes it (CB13). It is also the
	// RetryAfter of a breaker that will not admit a probe by itself
	// (ForcedOpen, or Open with a Forever cool-down).
	Forever time.Duration = math.MaxInt64

	// maxProbesLimit bounds Config.MaxProbes.
	maxProbesLimit = 1024
)

// Config configures a [Breaker]. Every zero field selects a documented
// default, so Config{} is a working breaker: five consecutive failures trip
// it, it cools down for 30 seconds, then admits one probe. [New] validates
// it (a bad field is an error naming it) and keeps a copy: changing a Config
// afterwards does not change the breaker.
type Config struct {
	// Name names the breaker in its transitions, rejections and
	// snapshots ([Transition.Name], [OpenError.Name], [Snapshot.Name]) and
	// in logged listener panics, so that logs and status pages can tell
	// breakers apart. It is free text; empty means unnamed.
	Name string

	// Policy decides when the breaker trips and when probes close it.
	// nil means [Consecutive]{} (5 consecutive failures trip; one probe
	// success closes).
	Policy Policy

	// ResetTimeout is the cool-down: how long the breaker stays Open
	// before it admits a probe. Zero means [DefaultResetTimeout] (30s).
	// [Immediate] means no cool-down at all; [Forever] means the breaker
	// stays Open until Reset or a Switch. Other negative values are an
	// error.
	ResetTimeout time.Duration

	// MaxResetTimeout, when non-zero, makes the cool-down grow (CB14): the
	// first trip from Closed cools down for ResetTimeout, and each
	// consecutive re-open from HalfOpen multiplies the previous cool-down
	// by ResetTimeoutMultiplier, up to MaxResetTimeout. Closing the
	// breaker (or Reset) starts again from ResetTimeout. Zero means a
	// constant cool-down. It must be >= ResetTimeout, and ResetTimeout
	// must then be a positive duration (not Immediate or Forever).
	// MaxResetTimeout may be Forever (grow without a cap).
	MaxResetTimeout time.Duration

	// ResetTimeoutMultiplier is the growth factor of the cool-down when
	// MaxResetTimeout is set. Zero means
	// [DefaultResetTimeoutMultiplier] (2). It must be finite and >= 1,
	// and is an error without MaxResetTimeout.
	ResetTimeoutMultiplier float64

	// MaxProbes is how many probes may be in flight at once in HalfOpen
	// (CB3). Zero means 1; at most 1024.
	MaxProbes int

	// ProbeLease bounds how long a probe permit holds its slot (CB6): a
	// probe that has not reported its outcome after ProbeLease no longer
	// counts as in flight, its slot is given to the next caller, and its
	// outcome, if it ever comes, is discarded. Zero means
	// [DefaultProbeLease] (one minute). Negative values are an error.
	ProbeLease time.Duration

	// IsFailure, when set, is asked about every error that the default
	// classification counts as a failure when a permit is finished with
	// [Permit.Done] ([Classify]) or [Permit.DoneContext] ([ClassifyContext],
	// and so by the layer from [NewLayer]), and about every non-nil error
	// that the classifier of [NewClassifiedLayer] counts as a failure.
	// Returning false makes the
	// error count as a success: it still reaches the caller, but it does
	// not indicate an unhealthy dependency, and it counts toward closing
	// from HalfOpen (CB8). It is called concurrently and must be safe for
	// concurrent use. nil counts every such error as a failure. It is the
	// shouldTrip predicate of the seed documents.
	IsFailure func(err error) bool

	// AsyncListeners, when true, delivers transitions to the listeners of
	// [Breaker.Subscribe] on a goroutine of the breaker's own, never on
	// the goroutine of a call: a slow listener cannot slow the call that
	// tripped the breaker. The goroutine is started when a transition is
	// queued and none is delivering, and exits once the queue is empty, so
	// none runs while nothing is pending. The guarantees are those of
	// synchronous delivery: in order, one at a time, panics recovered.
	// The queue is not bounded: a transition is dropped by nobody, and
	// while a listener blocks, each further transition adds one
	// [Transition] to it. In a testing/synctest bubble, synctest.Wait
	// returns once the pending transitions are delivered.
	//
	// False (the default) calls listeners on the goroutine that caused
	// the transition, before that goroutine returns to its caller, as
	// gobreaker, resilience4j and Polly do: a listener then sees a
	// transition before the call that caused it returns.
	AsyncListeners bool

	// ListenerPanic, when set, is called with the value and the stack
	// (from [runtime/debug.Stack]) of every panic a listener raises, on
	// the goroutine that was delivering; delivery then goes on. nil logs
	// the panic and its stack with the standard [log] package. A panic in
	// ListenerPanic itself is logged.
	ListenerPanic func(value any, stack []byte)

	// Switch, when set, is a manual switch that can force this breaker
	// open or closed (CB12). One Switch may control many breakers.
	Switch *Switch
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
	}
	switch {
	case c.ResetTimeout < 0 && c.ResetTimeout != Immediate:
		return s, fmt.Errorf("circuitbreaker: ResetTimeout must be >= 0 (or Immediate), got %v", c.ResetTimeout)
	case c.MaxProbes < 0 || c.MaxProbes > maxProbesLimit:
		return s, fmt.Errorf("circuitbreaker: MaxProbes must be in [0, %d], got %d", maxProbesLimit, c.MaxProbes)
	case c.ProbeLease < 0:
		return s, fmt.Errorf("circuitbreaker: ProbeLease must be >= 0, got %v", c.ProbeLease)
	case c.MaxResetTimeout < 0:
		return s, fmt.Errorf("circuitbreaker: MaxResetTimeout must be >= 0, got %v", c.MaxResetTimeout)
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
			return s, fmt.Errorf("circuitbreaker: MaxResetTimeout must be >= ResetTimeout (%v), got %v", s.cooldown, c.MaxResetTimeout)
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
