package retry

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is a schedule of delays between attempts.
//
// Delay returns how long to wait before retry number attempt, where attempt
// is 1 for the wait between the first and second call, 2 for the next, and
// so on up to [math.MaxInt]. prev is the delay the schedule returned for the
// previous retry of the same call, or zero before the first retry; stateful
// schedules such as decorrelated jitter use it instead of keeping state, so
// one Backoff serves many concurrent calls.
//
// Delay must be safe for concurrent use. The retry layer treats a negative
// result as zero; the schedules in this package never return one.
type Backoff interface {
	Delay(attempt int, prev time.Duration) time.Duration
}

// BackoffFunc adapts an ordinary function to a [Backoff], as
// [net/http.HandlerFunc] adapts a function to a Handler. [Config] and
// [Settings] reject a nil BackoffFunc; called directly, its Delay is 0.
type BackoffFunc func(attempt int, prev time.Duration) time.Duration

// Delay calls f(attempt, prev), or returns 0 for a nil f.
func (f BackoffFunc) Delay(attempt int, prev time.Duration) time.Duration {
	if f == nil {
		return 0
	}
	return f(attempt, prev)
}

// constant is the schedule returned by [NewConstant].
type constant time.Duration

func (c constant) Delay(int, time.Duration) time.Duration { return time.Duration(c) }

// NewConstant returns a schedule that waits d before every retry. A zero d
// retries at once, which only MaxAttempts and the budget then bound.
//
// It returns an error if d is negative.
func NewConstant(d time.Duration) (Backoff, error) {
	if d < 0 {
		return nil, fmt.Errorf("retry: Constant delay must be >= 0, got %v", d)
	}
	return constant(d), nil
}

// Jitter selects how [Exponential] randomises its delays, after Marc
// Brooker, "Exponential Backoff and Jitter", AWS Architecture Blog (2015).
// Jitter spreads the retries of many clients that failed together, so they
// do not hit the recovering dependency in synchronised waves.
type Jitter int

const (
	// FullJitter waits a uniformly random time in [0, d), where d is the
	// capped exponential delay. It is the zero value and the default: the
	// blog's measurements show it does the least total work.
	FullJitter Jitter = iota
	// EqualJitter waits d/2 plus a uniformly random time in [0, d/2): never
	// less than half the exponential delay.
	EqualJitter
	// DecorrelatedJitter waits a uniformly random time in [Base, 3*prev),
	// capped at Max, where prev is the previous delay (Base before the first
	// retry). It grows from the previous delay rather than the attempt
	// number.
	DecorrelatedJitter
	// NoJitter waits exactly the capped exponential delay d.
	NoJitter
)

// String returns the jitter's name, such as "FullJitter".
func (j Jitter) String() string {
	switch j {
	case FullJitter:
		return "FullJitter"
	case EqualJitter:
		return "EqualJitter"
	case DecorrelatedJitter:
		return "DecorrelatedJitter"
	case NoJitter:
		return "NoJitter"
	}
	return fmt.Sprintf("Jitter(%d)", int(j))
}

// Defaults for the zero fields of [Exponential].
const (
	// DefaultBase is the first delay: long enough to let a transient fault
	// (a dropped connection, a leader election) clear, short enough that a
	// request retried once still answers well within a second.
	DefaultBase = 100 * time.Millisecond
	// DefaultMax caps every delay: a caller that has waited 10s between
	// attempts is usually better served by failing.
	DefaultMax = 10 * time.Second
	// DefaultMultiplier doubles the delay on each retry, as in the AWS blog.
	DefaultMultiplier = 2.0
)

// Exponential configures the schedule returned by [NewExponential]: before
// retry n it computes d = min(Max, Base*Multiplier^(n-1)) and applies Jitter.
// Every zero field takes its documented default.
type Exponential struct {
	// Base is the delay before the first retry. Zero means [DefaultBase].
	// Negative is an error.
	Base time.Duration
	// Max caps every delay, with or without jitter. Zero means
	// [DefaultMax] (or Base, if Base is larger). Less than Base is an error.
	Max time.Duration
	// Multiplier is the growth factor per retry. Zero means
	// [DefaultMultiplier]; it must otherwise be a finite number >= 1.
	Multiplier float64
	// Jitter selects the randomisation. The zero value is [FullJitter].
	Jitter Jitter
	// Rand returns uniformly distributed numbers in [0, 1). A fixed source
	// makes the schedule reproducible. It must be safe for concurrent use
	// if the schedule is used concurrently (a *rand.Rand is not). Results
	// outside [0, 1) are clamped into it. Nil means [math/rand/v2.Float64],
	// which is safe for concurrent use.
	Rand func() float64
}

// exponential is the validated schedule returned by [NewExponential].
type exponential struct {
	base, max time.Duration
	mult      float64
	jitter    Jitter
	rand      func() float64
}

// NewExponential validates cfg, fills its defaults and returns the schedule.
// The result is safe for concurrent use when cfg.Rand is. Its delays are
// never negative and never above Max for any attempt up to [math.MaxInt]:
// the growth is computed in floating point and compared with Max before
// converting back, so it cannot overflow.
//
// It returns an error naming the field if Base is negative, Max is negative
// or below Base, Multiplier is below 1, NaN or infinite, or Jitter is
// unknown.
func NewExponential(cfg Exponential) (Backoff, error) {
	e := exponential{base: cfg.Base, max: cfg.Max, mult: cfg.Multiplier, jitter: cfg.Jitter, rand: cfg.Rand}
	switch {
	case e.base < 0:
		return nil, fmt.Errorf("retry: Exponential.Base must be 0 (the default, %v) or positive, got %v", DefaultBase, e.base)
	case e.base == 0:
		e.base = DefaultBase
	}
	switch {
	case e.max == 0:
		e.max = max(DefaultMax, e.base)
	case e.max < e.base: // negative included
		return nil, fmt.Errorf("retry: Exponential.Max must be 0 (the default, %v or Base if larger) or at least Base (%v), got %v", DefaultMax, e.base, e.max)
	}
	switch {
	case e.mult == 0:
		e.mult = DefaultMultiplier
	case !(e.mult >= 1) || math.IsInf(e.mult, 1):
		return nil, fmt.Errorf("retry: Exponential.Multiplier must be 0 (the default, %v) or a finite number >= 1, got %v", DefaultMultiplier, e.mult)
	}
	if e.jitter < FullJitter || e.jitter > NoJitter {
		return nil, fmt.Errorf("retry: Exponential.Jitter must be one of FullJitter, EqualJitter, DecorrelatedJitter, NoJitter, got %v", e.jitter)
	}
	if e.rand == nil {
		e.rand = rand.Float64
	}
	return e, nil
}

// Delay returns the delay before retry number attempt; attempt values
// below 1 count as 1.
func (e exponential) Delay(attempt int, prev time.Duration) time.Duration {
	if e.jitter == DecorrelatedJitter {
		// random in [Base, 3*prev), computed in float64 so 3*prev cannot
		// overflow; prev below Base (including the first retry) counts as Base.
		lo := float64(e.base)
		hi := 3 * float64(max(prev, e.base))
		return e.clamp(lo + e.unit()*(hi-lo))
	}
	d := float64(e.base) * math.Pow(e.mult, float64(max(attempt, 1)-1))
	switch e.jitter {
	case FullJitter:
		return e.clamp(e.unit() * min(d, float64(e.max)))
	case EqualJitter:
		half := min(d, float64(e.max)) / 2
		return e.clamp(half + e.unit()*half)
	}
	return e.clamp(d)
}

// unit returns e.rand() forced into [0, 1), NaN counting as 0.
func (e exponential) unit() float64 {
	u := e.rand()
	if !(u > 0) { // also catches NaN
		return 0
	}
	return min(u, math.Nextafter(1, 0))
}

// clamp converts a non-negative float delay to a Duration no larger than
// e.max. The comparison happens in float64 before the conversion, so a huge
// or infinite d becomes e.max rather than overflowing.
func (e exponential) clamp(d float64) time.Duration {
	if !(d > 0) {
		return 0
	}
	if d >= float64(e.max) {
		return e.max
	}
	return time.Duration(d)
}
