package circuitbreaker

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/observe"
)

// Breaker is a circuit breaker shared by every caller of one dependency.
// The zero Breaker behaves as New(Config{}). It is safe for concurrent
// use, must not be copied after first use, and starts no goroutine unless
// [Config.AsyncListeners] asks; under testing/synctest, create it in the
// bubble that uses it.
//
// A nil *Breaker guards nothing and never panics: TryAcquire returns an
// error saying so (not an [*OpenError]: nothing tripped), State is
// the zero [Snapshot], Reset does nothing, Subscribe and
// SubscribeFailures register nothing, and Tune and ApplyRemote return an
// error. A layer over one fails every call, and [Run] with one is an
// error.
type Breaker struct {
	// word is the state and the epoch, packed as
	// epoch<<epochShift | flags | state, so that one atomic load tells a
	// caller both. It is written only with
	// mu held, after period (see below), and read without mu everywhere.
	// It is zero only in a zero Breaker not yet set up (flagMade clear).
	// The epoch grows by one on every state change (and on Reset), so a
	// permit that remembers the word it was issued under can tell whether
	// its outcome still belongs to the current period.
	// The fields read by every call (word, period, tracker) sit on
	// cache lines that nothing written per call shares: this padding keeps
	// the end of whatever object the allocator put before the Breaker off
	// word's line (objects of this size are not 64-byte aligned).
	_ [cacheLine]byte

	word atomic.Uint64

	// period describes the current Open, HalfOpen or ForcedOpen period:
	// its cool-down deadline, cause and prebuilt refusal. It is replaced
	// (never mutated) with mu held and stored before word, so a reader
	// that loads word and then period and finds period.word equal to the
	// word it loaded (without flagReady) has a consistent pair: the store
	// of the newer period happens before the store of the newer word.
	period atomic.Pointer[period]

	tracker Tracker
	wanter  successWanter  // tracker's, or wantsAll: never nil
	counter successCounter // tracker, if it is one
	// run is the run of failures of tracker if it is a Consecutive's
	// (the default policy), read by quiet without an interface call.
	run    *atomic.Int64
	timing timing
	set    settings
	// base and origin are the origin of the monotonic clock readings
	// (mono): the cool-down deadline is a number of nanoseconds since
	// then. base is the system's clock reading, origin the supplied
	// Clock's Monotonic reading (when set.clock is set).
	base   time.Time
	origin time.Duration

	mu sync.Mutex
	// cooldown is the cool-down of the current or most recent Open period;
	// it grows on consecutive re-opens. Guarded by mu.
	cooldown time.Duration
	// timer, while the breaker is Open with a finite cool-down, sets
	// flagReady near its end; every transition stops it. Guarded by mu.
	timer clock.Timer
	// probes are the probes in flight in HalfOpen, at most MaxProbes.
	// Guarded by mu.
	probes []probe
	// ticket numbers probe permits, so that a probe whose lease expired
	// can be told apart from the one that took its slot. Guarded by mu.
	ticket int64
	// succeeded and failed count the judged probes of the current HalfOpen
	// period. lastFailure is the error of the most recent failure recorded
	// in the current Closed or HalfOpen period. Guarded by mu.
	succeeded, failed int
	lastFailure       error
	// tripCounts are the counts of the trip being entered. Guarded by mu.
	tripCounts Counts

	// events delivers transitions to the listeners (see notify.go).
	events dispatcher[Transition]
	// tunes delivers Tune's events to the Observer in the order the
	// changes were applied (pushed with mu held); nil without an
	// Observer. Set by New, read-only afterwards.
	tunes *dispatcher[observe.Event]

	// onFailure holds the functions registered with SubscribeFailures (nil
	// if none), copied on write with mu held; failureID numbers them.
	onFailure atomic.Pointer[[]failureFunc]
	failureID uint64 // guarded by mu
}

// The state word: the low three bits are the State, the next three bits
// are flagTimed, flagMade and flagReady, the rest the epoch.
const (
	stateMask  = 7
	epochShift = 6
	// flagTimed is set in every word of a breaker whose policy measures
	// latency, and flagMade in every word of a breaker that is set up (by
	// New, or by the first use of a zero Breaker), so that a single
	// comparison (w&fastMask == fastWord) tells the fast paths "set up",
	// "Closed" and "no clock read needed" at once: a zero Breaker's word
	// fails it and takes the slow path, which sets the breaker up.
	flagTimed = 8
	flagMade  = 16
	fastMask  = stateMask | flagTimed | flagMade
	fastWord  = flagMade // Closed, untimed, set up
	// rejectMask picks the bits that tell an Open word whose rejection
	// needs no clock read: w&rejectMask == Open (flagReady clear).
	rejectMask = stateMask | flagReady
	// flagReady is set in an Open word once the end of the cool-down is
	// near (see readyLead): until then a refusal reads no clock; from
	// then on it reads the clock to tell whether the cool-down is over.
	// Setting it changes neither the state nor the epoch.
	flagReady = 32
)

func stateOf(w uint64) State { return State(w & stateMask) }

// never is the cool-down deadline of a period that does not end by itself.
const never = int64(rampart.Forever)

// period is one Open, HalfOpen or ForcedOpen period.
type period struct {
	word  uint64 // the state word of the period, without flagReady
	until int64  // Open: mono time when the cool-down ends, or never
	cause error
	// remote is true for an Open imposed by ApplyRemote and the HalfOpen
	// that follows it: a remote Close ends only such a period.
	remote bool
	// reject is the refusal for the whole period (nil in Closed and
	// ForcedClosed), built when the period starts.
	reject *OpenError
}

// probe is a probe permit in flight.
type probe struct {
	ticket int64
	expiry int64 // mono time when its lease ends
	start  int64 // mono time when admitted, if the policy measures latency
}

// New returns a Closed breaker configured by cfg, or an error naming the
// first bad field of cfg or of its Policy.
func New(cfg Config) (*Breaker, error) {
	set, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	policy := cfg.Policy
	if policy == nil {
		policy = Consecutive{}
	}
	tracker, err := newTracker("Config.Policy", policy)
	if err != nil {
		return nil, err
	}
	if tracker == nil {
		return nil, fmt.Errorf("circuitbreaker: Policy %T returned a nil Tracker", policy)
	}
	b := &Breaker{}
	b.init(set, tracker)
	if set.observer != nil {
		b.events.subscribe(observeTransitions(cfg.Name, set.observer))
		b.tunes = &dispatcher[observe.Event]{async: set.async, onPanic: set.onPanic, name: set.name}
		b.tunes.subscribe(func(e observe.Event) { set.observer.Observe(context.Background(), e) })
	}
	if _, binds := cfg.Observer.(observe.Binder); binds && set.observer != nil {
		// An Observer that bound itself to the breaker keeps something
		// for it: a breaker dropped without a Group (replaced under its
		// name, say) is reported removed once collected, so that nothing
		// the Observer keeps for it outlives it.
		runtime.AddCleanup(b, reportRemoved, removal{obs: set.observer, name: cfg.Name})
	}
	if cfg.Switch != nil {
		cfg.Switch.attach(b)
	}
	return b, nil
}

// removal is what reportRemoved needs of a collected breaker.
type removal struct {
	obs  observe.Observer
	name string
}

// reportRemoved reports a collected breaker as removed.
func reportRemoved(r removal) {
	r.obs.Observe(context.Background(), observe.Event{Source: observe.Breaker, Name: r.name, Kind: observe.Removed})
}

// init sets b up, Closed, with validated settings and a tracker, and
// publishes it by storing a word with flagMade last: a goroutine that loads
// that word sees every field written here. Called by New on a Breaker
// nobody else sees yet, or by setUp with mu held.
func (b *Breaker) init(set settings, tracker Tracker) {
	b.tracker = tracker
	b.timing = timingOf(tracker)
	b.wanter = wanterOf(tracker)
	b.set = set
	b.events.async, b.events.onPanic, b.events.name = set.async, set.onPanic, set.name
	if c := set.clock; c != nil {
		b.origin = c.Monotonic()
	} else {
		b.base = time.Now()
	}
	giveClock(tracker, (*breakerClock)(b))
	b.cooldown = set.cooldown
	b.probes = make([]probe, 0, set.maxProbes)
	w := uint64(flagMade)
	if b.timing == timingLatency {
		w |= flagTimed
	}
	b.counter, _ = tracker.(successCounter)
	b.run = nil
	if c, ok := tracker.(*consecutive); ok {
		b.run = &c.run
	}
	b.period.Store(&period{word: w})
	b.word.Store(w)
}

// setUp sets up a zero Breaker on its first use as New(Config{}) would,
// and does nothing to a Breaker already set up. Called with mu held, so
// goroutines that use a zero Breaker for the first time together set it up
// once.
func (b *Breaker) setUp() {
	if b.word.Load()&flagMade != 0 {
		return
	}
	// Neither can fail: the zero Config and the zero Consecutive are
	// valid, which the zero-value tests check.
	set, _ := Config{}.validate()
	tracker, _ := Consecutive{}.NewTracker()
	b.init(set, tracker)
}

// mono returns the monotonic time since the breaker's origin in
// nanoseconds, from the supplied Clock's Monotonic reading or the system's
// monotonic clock.
func (b *Breaker) mono() int64 {
	if c := b.set.clock; c != nil {
		return int64(c.Monotonic() - b.origin)
	}
	return int64(time.Since(b.base))
}

// wall returns the wall time, for a transition's timestamp.
func (b *Breaker) wall() time.Time {
	if c := b.set.clock; c != nil {
		return c.Now()
	}
	return time.Now()
}

// afterFunc calls f in its own goroutine after d, on the breaker's clock.
func (b *Breaker) afterFunc(d time.Duration, f func()) clock.Timer {
	if c := b.set.clock; c != nil {
		return c.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f)
}

// breakerClock is a Breaker as the clock it gives a [ClockUser]: its
// readings and timers are the breaker's, and its Monotonic readings share
// the origin of [Call.Monotonic].
type breakerClock Breaker

func (c *breakerClock) Now() time.Time           { return (*Breaker)(c).wall() }
func (c *breakerClock) Monotonic() time.Duration { return time.Duration((*Breaker)(c).mono()) }
func (c *breakerClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return (*Breaker)(c).afterFunc(d, f)
}

// wallAt returns the wall time of the monotonic reading m, which is not
// later than now (a mono reading taken just before).
func (b *Breaker) wallAt(m, now int64) time.Time {
	if b.set.clock == nil {
		return b.base.Add(time.Duration(m))
	}
	return b.wall().Add(time.Duration(m - now))
}
