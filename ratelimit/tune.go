package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"weak"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/tuned"
	"github.com/rampart-go/rampart/observe"
)

// Tuning is the rate and burst of a token bucket, as [Tune] sets them.
type Tuning struct {
	// Limit is how many tokens the bucket gains per second; [rate.Inf]
	// for no limit. It must be >= 0.
	Limit rate.Limit
	// Burst is how many tokens the bucket holds. It must be >= 0, and
	// >= 1 with a positive, finite Limit: a bucket that holds no token
	// admits no call (x/time/rate's zero Burst); to admit none, set Limit
	// to 0.
	Burst int
}

// Tune sets lim's rate and burst while calls flow through the layers
// built with it (and through any other user of lim), or returns an error
// naming the bad field, changing nothing: lim nil, Limit negative or NaN,
// Burst negative, or zero with a positive, finite Limit. It uses [rate.Limiter.SetLimitAt] and
// [rate.Limiter.SetBurstAt] at the time of those layers' Clock
// ([clock.MonotonicTime]; the system's clock when they have none), so
// the tokens earned so far are kept, at the old rate until now, and
// tokens above a smaller Burst are dropped at the next call; calls
// waiting in a layer's line wait for tokens at the new rate from their
// next reservation. Each layer built with lim that has an Observer is
// told with an event of kind [observe.Tuned] (Source RateLimit, the
// layer's Name). Safe for concurrent use.
func Tune(lim *rate.Limiter, t Tuning) error {
	switch {
	case lim == nil:
		return errors.New("ratelimit: Tune's limiter must not be nil")
	case math.IsNaN(float64(t.Limit)) || t.Limit < 0:
		return fmt.Errorf("ratelimit: Tuning.Limit must be >= 0 (or rate.Inf), got %v", t.Limit)
	case t.Burst < 0:
		return fmt.Errorf("ratelimit: Tuning.Burst must be >= 0, got %d", t.Burst)
	case t.Burst == 0 && t.Limit > 0 && t.Limit != rate.Inf:
		return fmt.Errorf("ratelimit: Tuning.Burst must be >= 1 with a Limit of %v per second (a zero Burst admits no call; a Limit of 0 admits none), got 0", float64(t.Limit))
	}
	var clk clock.Clock
	var u *limiterUsers
	if v, ok := users.Load(weak.Make(lim)); ok {
		u = v.(*limiterUsers)
		u.mu.Lock()
		clk = u.clk
		u.mu.Unlock()
	}
	now := clock.MonotonicTime(clk)
	lim.SetLimitAt(now, t.Limit)
	lim.SetBurstAt(now, t.Burst)
	if u != nil {
		u.watchers.Tell(observe.Event{Source: observe.RateLimit})
	}
	return nil
}

// users maps each *rate.Limiter that layers use (by a weak pointer, so
// that a limiter nobody uses any more is collected and its entry dropped)
// to its *limiterUsers.
var users sync.Map

// limiterUsers is what Tune and NewLayer need of the layers built with
// one limiter.
type limiterUsers struct {
	mu       sync.Mutex
	built    bool        // guarded by mu; a layer was built with the limiter
	clk      clock.Clock // guarded by mu; the layers' Clock; nil: the system's
	watchers tuned.Watchers
}

// register records a layer built with lim, for Tune, or returns an error
// when its clock is not the clock of the layers built with lim before:
// a limiter's tokens are counted on one clock.
func register(lim *rate.Limiter, clk clock.Clock, name string, obs observe.Observer) error {
	key := weak.Make(lim)
	v, loaded := users.LoadOrStore(key, &limiterUsers{})
	if !loaded {
		runtime.AddCleanup(lim, func(k weak.Pointer[rate.Limiter]) { users.Delete(k) }, key)
	}
	u := v.(*limiterUsers)
	u.mu.Lock()
	if u.built && !sameClock(u.clk, clk) {
		was := u.clk
		u.mu.Unlock()
		return mixedClocks(clk, was)
	}
	u.built, u.clk = true, clk
	u.mu.Unlock()
	if obs != nil {
		u.watchers.Add(name, obs)
	}
	return nil
}

// sameClock reports whether a and b are the same Clock. Two values of a
// type that == cannot compare are taken as the same.
func sameClock(a, b clock.Clock) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) {
		return false
	}
	return !ta.Comparable() || a == b
}

// mixedClocks is NewLayer's error for a layer on clk over a limiter
// whose layers run on was.
func mixedClocks(clk, was clock.Clock) error {
	const why = "a rate.Limiter counts its tokens on one clock"
	if clk != nil && was != nil && reflect.TypeOf(clk) == reflect.TypeOf(was) {
		return fmt.Errorf("ratelimit: Config.Clock is another %T than the one the layers built with this Limiter run on: %s", clk, why)
	}
	return fmt.Errorf("ratelimit: Config.Clock is %s, but the layers built with this Limiter run on %s: %s", clockName(clk), clockName(was), why)
}

// clockName names clk in an error.
func clockName(clk clock.Clock) string {
	if clk == nil {
		return "nil (the system's clock)"
	}
	return fmt.Sprintf("a %T", clk)
}
