package circuitbreaker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Breaker is a circuit breaker: a state machine shared by every caller of
// one dependency. [Run] and the layer from [NewLayer] use it; by hand, ask
// it for a [Permit] with [Breaker.TryAcquire] and report the outcome on
// the permit.
//
// A Breaker is safe for concurrent use. Create one with [New]; the zero
// Breaker behaves as one from New(Config{}) and sets itself up on first
// use. A Breaker must not be copied after first use. It starts no
// goroutine (unless [Config.AsyncListeners] asks for one to deliver
// transitions).
//
// Time is measured on the monotonic clock from creation (or first use of a
// zero Breaker): in a testing/synctest bubble, create the Breaker inside
// the bubble that uses it.
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
	_ [64]byte

	word atomic.Uint64

	// period describes the current Open, HalfOpen or ForcedOpen period:
	// its cool-down deadline, cause and prebuilt rejection errors. It is
	// replaced (never mutated, except for its error cache) with mu held
	// and stored before word, so a reader that loads word and then period
	// and finds period.word equal to the word it loaded has a consistent
	// pair: the store of the newer period happens before the store of the
	// newer word.
	period atomic.Pointer[period]

	tracker Tracker
	timing  Timing
	set     settings
	// base is the origin of the monotonic clock readings (mono): the
	// cool-down deadline is a number of nanoseconds since base.
	base time.Time

	mu sync.Mutex
	// cooldown is the cool-down of the current or most recent Open period;
	// it grows on consecutive re-opens. Guarded by mu.
	cooldown time.Duration
	// probes are the probes in flight in HalfOpen, at most MaxProbes.
	// Guarded by mu.
	probes []probe
	// ticket numbers probe permits, so that a probe whose lease expired
	// can be told apart from the one that took its slot. Guarded by mu.
	ticket uint64
	// succeeded and failed count the judged probes of the current HalfOpen
	// period. lastFailure is the error of the most recent failure recorded
	// in the current Closed or HalfOpen period. Guarded by mu.
	succeeded, failed int
	lastFailure       error

	// events delivers transitions to the listeners (see notify.go).
	events dispatcher[Transition]
}

// The state word: the low three bits are the State, the next two bits are
// flagTimed and flagMade, the rest the epoch.
const (
	stateMask  = 7
	epochShift = 5
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
)

func stateOf(w uint64) State { return State(w & stateMask) }

// never is the cool-down deadline of a period that does not end by itself.
const never = int64(Forever)

// period is one Open, HalfOpen or ForcedOpen period.
type period struct {
	word  uint64 // the state word of the period
	name  string // the breaker's Name
	until int64  // Open: mono time when the cool-down ends, or never
	cause error
	// fixed is the prebuilt rejection for the whole period when its
	// RetryAfter does not change: zero in HalfOpen (probe slots full),
	// Forever in ForcedOpen and in an Open period with a Forever cool-down.
	fixed *OpenError
	// last caches the most recent Open rejection, reused while the
	// rounded RetryAfter is the same.
	last atomic.Pointer[OpenError]
}

// probe is a probe permit in flight.
type probe struct {
	ticket uint64
	expiry int64 // mono time when its lease ends
}

// New returns a Closed breaker configured by cfg, or an error naming the
// first bad field of cfg or of its Policy. Zero fields take the
// defaults documented on [Config].
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
	if timing := tracker.Timing(); timing > TimingLatency {
		return nil, fmt.Errorf("circuitbreaker: Policy %T: Tracker.Timing must be TimingNone, TimingNow or TimingLatency, got %d", policy, timing)
	}
	b := &Breaker{}
	b.init(set, tracker)
	if cfg.Observer != nil {
		b.events.subscribe(observeTransitions(cfg.Name, cfg.Observer))
	}
	if cfg.Switch != nil {
		cfg.Switch.attach(b)
	}
	return b, nil
}

// init sets b up, Closed, with validated settings and a tracker, and
// publishes it by storing a word with flagMade last: a goroutine that loads
// that word sees every field written here. Called by New on a Breaker
// nobody else sees yet, or by setUp with mu held.
func (b *Breaker) init(set settings, tracker Tracker) {
	b.tracker = tracker
	b.timing = tracker.Timing()
	b.set = set
	b.events.async, b.events.onPanic, b.events.name = set.async, set.onPanic, set.name
	b.base = time.Now()
	b.cooldown = set.cooldown
	b.probes = make([]probe, 0, set.maxProbes)
	w := uint64(flagMade)
	if b.timing == TimingLatency {
		w |= flagTimed
	}
	b.period.Store(&period{word: w, name: set.name})
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

// mono returns the monotonic time since b.base in nanoseconds. It reads
// only the monotonic clock.
func (b *Breaker) mono() int64 { return int64(time.Since(b.base)) }
