package circuitbreaker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Breaker is a circuit breaker: a state machine shared by every caller of
// one dependency. Callers ask it for a [Permit] before each call with
// [Breaker.TryAcquire] and report the outcome on the permit; the layer from
// [NewLayer] does both.
//
// A Breaker is safe for concurrent use by multiple goroutines. It starts no
// goroutine: an Open breaker becomes HalfOpen lazily, on the first acquire
// after the cool-down. Create one with [New]. The zero Breaker is usable
// too and behaves as one from New(Config{}) (five consecutive failures
// trip it, a 30-second cool-down, one probe): it sets itself up on first
// use, and its clock starts then. A Breaker must not be copied after first
// use.
//
// Cost: a call through a Closed breaker reads one atomic word when it is
// admitted and, with the default policy, two more when it succeeds (the
// word again, and the policy's failure count); it takes
// no lock, reads no clock, writes no shared memory and allocates nothing. A
// rejection by an Open breaker reads the monotonic clock once and allocates
// at most once per millisecond of cool-down (see [Breaker.TryAcquire]).
// Transitions, failures and everything in HalfOpen take a mutex.
//
// Time is measured on the monotonic clock from the moment New ran (or a
// zero Breaker was first used). In a testing/synctest bubble, whose clock
// is its own, create (or first use) the Breaker inside the bubble that uses
// it; one created outside reports meaningless durations there.
type Breaker struct {
	// word is the state and the epoch, packed as
	// epoch<<epochShift | flags | state, so that one atomic load tells a
	// caller both. It is written only with
	// mu held, after period (see below), and read without mu everywhere.
	// It is zero only in a zero Breaker not yet set up (flagMade clear).
	// The epoch grows by one on every state change (and on Reset), so a
	// permit that remembers the word it was issued under can tell whether
	// its outcome still belongs to the current period.
	// The fields read by every call (word, period, tracker, busy) sit on
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
	// busy is the tracker's quiet counter when it is a quieter
	// (Consecutive, FailureRate over a count window), read by quiet without
	// an interface call; else wanting.
	busy   *atomic.Int64
	timing Timing
	set    settings
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

	// Listener state, guarded by mu: see notify.go.
	listeners  []listener
	nextID     uint64
	queue      []Transition
	delivering bool
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
	b.base = time.Now()
	b.cooldown = set.cooldown
	b.probes = make([]probe, 0, set.maxProbes)
	b.busy = wanting
	if q, ok := tracker.(quieter); ok && q.quietCounter() != nil {
		b.busy = q.quietCounter()
	}
	w := uint64(flagMade)
	if b.timing == TimingLatency {
		w |= flagTimed
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

// mono returns the monotonic time since b.base in nanoseconds. It reads
// only the monotonic clock.
func (b *Breaker) mono() int64 { return int64(time.Since(b.base)) }

// TryAcquire asks to make one call. It never blocks.
//
// On success the returned [Permit] must be finished with exactly one of
// [Permit.Success], [Permit.Failure], [Permit.Ignore], [Permit.Done] or
// [Permit.DoneContext]. A probe permit that is never finished gives up its
// slot after the configured ProbeLease.
//
// When the breaker rejects the call the error is an [*OpenError] that
// matches [ErrOpen]: in Open its RetryAfter is the rest of the cool-down,
// rounded up to a whole millisecond so that waiting RetryAfter always finds
// the cool-down over; in HalfOpen with every probe slot taken it is zero;
// in ForcedOpen, or Open with a Forever cool-down, it is [Forever]. Cause
// is the failure that tripped the breaker (or the reason given to
// [Switch.ForceOpen]), and the error unwraps to it, so [errors.Is] and
// [errors.As] find it too.
//
// The rejection error may be shared by every caller rejected in the same
// millisecond of the same period (this keeps rejection free of allocation):
// treat it as read-only.
func (b *Breaker) TryAcquire() (Permit, error) {
	// The Closed fast path: one atomic load and one comparison, which also
	// rules out a policy that needs the clock (flagTimed) and a zero
	// Breaker not yet set up (flagMade).
	if w := b.word.Load(); w&fastMask == fastWord {
		return Permit{b: b, word: w}, nil
	}
	return b.tryAcquire()
}

// tryAcquire is TryAcquire after the Closed fast path.
func (b *Breaker) tryAcquire() (Permit, error) {
	for {
		w := b.word.Load()
		if w&flagMade == 0 { // a zero Breaker's first use
			b.mu.Lock()
			b.setUp()
			b.mu.Unlock()
			continue
		}
		switch stateOf(w) {
		case Closed, ForcedClosed:
			return b.permit(w, 0), nil
		case Open:
			per := b.period.Load()
			if per.word != w {
				continue // a transition is being published; look again
			}
			if per.fixed != nil {
				return Permit{}, per.fixed
			}
			if left := per.until - b.mono(); left > 0 {
				return Permit{}, per.rejection(left)
			}
			return b.acquireSlow()
		case ForcedOpen:
			per := b.period.Load()
			if per.word != w {
				continue
			}
			return Permit{}, per.fixed
		default: // HalfOpen
			return b.acquireSlow()
		}
	}
}

// rejection returns the Open rejection for a remaining cool-down of left
// nanoseconds (> 0), rounded up to a millisecond, reusing the last one
// built in this period when it has the same RetryAfter.
func (per *period) rejection(left int64) *OpenError {
	const ms = int64(time.Millisecond)
	r := time.Duration(left)
	if left <= never-ms {
		r = time.Duration((left + ms - 1) / ms * ms)
	}
	if e := per.last.Load(); e != nil && e.RetryAfter == r {
		return e
	}
	e := &OpenError{RetryAfter: r, Cause: per.cause}
	per.last.Store(e)
	return e
}

// acquireSlow admits a call with the lock held: in HalfOpen, and at the end
// of a cool-down, where the Open → HalfOpen transition and the admission of
// the caller as the first probe are one atomic step.
func (b *Breaker) acquireSlow() (Permit, error) {
	b.mu.Lock()
	defer b.unlock()
	now := b.mono()
	w := b.word.Load()
	per := b.period.Load()
	switch stateOf(w) {
	case Closed, ForcedClosed:
		return b.permit(w, 0), nil
	case ForcedOpen:
		return Permit{}, per.fixed
	case Open:
		if per.fixed != nil {
			return Permit{}, per.fixed
		}
		if now < per.until {
			return Permit{}, per.rejection(per.until - now)
		}
		// The cool-down ended at per.until: the transition happened then.
		b.enter(HalfOpen, per.cause, b.base.Add(time.Duration(per.until)))
		w = b.word.Load()
		per = b.period.Load()
	}
	// HalfOpen.
	b.expireProbes(now)
	if len(b.probes) >= b.set.maxProbes {
		return Permit{}, per.fixed
	}
	b.ticket++
	b.probes = append(b.probes, probe{ticket: b.ticket, expiry: addSat(now, b.set.lease)})
	return b.permit(w, b.ticket), nil
}

// permit returns a permit for state word w and probe ticket t, reading the
// clock only if the policy measures latency.
func (b *Breaker) permit(w, t uint64) Permit {
	var start int64
	if b.timing == TimingLatency {
		start = b.mono()
	}
	return Permit{b: b, word: w, ticket: t, start: start}
}

// expireProbes drops the probes whose lease ended at or before now.
// Called with mu held.
func (b *Breaker) expireProbes(now int64) {
	kept := b.probes[:0]
	for _, p := range b.probes {
		if p.expiry > now {
			kept = append(kept, p)
		}
	}
	b.probes = kept
}

// addSat returns t+d, saturating at never.
func addSat(t int64, d time.Duration) int64 {
	if int64(d) > never-t {
		return never
	}
	return t + int64(d)
}

// record finishes permit p with outcome o and reports whether the outcome
// counted. It is the one place outcomes enter the state machine.
// ForcedClosed permits and stale permits never count.
func (b *Breaker) record(p *Permit, o Outcome, err error) bool {
	if o == Success && b.quiet(p.word) {
		return true
	}
	return b.recordSlow(p, o, err)
}

// quiet reports whether a success on a permit issued under state word w
// can be counted without the lock: the permit is from the current Closed
// epoch and the tracker does not need the success (with Consecutive: no
// failures pending). It writes nothing. Were the epoch to change right
// after the load, the success is ordered before that change, which it
// preceded. A built-in policy's quiet counter is read directly, saving an
// interface call on the hottest path.
func (b *Breaker) quiet(w uint64) bool {
	return w&fastMask == fastWord && b.word.Load() == w && b.busy.Load() == 0
}

// quieter is implemented by built-in trackers that keep in an atomic
// counter whether a success in Closed would change anything: while the
// counter is zero it would not (WantsSuccess is false). For Consecutive the
// counter is the run of failures. A nil counter means the tracker has none.
type quieter interface{ quietCounter() *atomic.Int64 }

// wanting is the counter b.quiet reads when the tracker is not a quieter:
// never zero, so every success takes the slow path, which asks the tracker.
var wanting = func() *atomic.Int64 {
	var one atomic.Int64
	one.Store(1)
	return &one
}()

// recordSlow is record for everything but the fast path.
func (b *Breaker) recordSlow(p *Permit, o Outcome, err error) bool {
	switch stateOf(p.word) {
	case Closed:
		switch {
		case o == Ignored:
			return false
		case o == Success && b.word.Load() == p.word && !b.tracker.WantsSuccess():
			return true // quiet, but the policy is not Consecutive
		}
		call := b.call(p, o, err)
		b.mu.Lock()
		defer b.unlock()
		if b.word.Load() != p.word {
			return false // stale: the breaker changed state since
		}
		if o == Failure {
			b.lastFailure = err
		}
		if b.tracker.Record(call) {
			// A rate policy may trip on a success (the call that brings
			// the window to MinCalls): the cause is then the policy's
			// reason, or the last failure.
			cause := b.successCause(o)
			if cause == nil {
				cause = b.lastFailure
			}
			b.trip(Closed, cause)
		}
		return true
	case HalfOpen:
		call := b.call(p, o, err)
		b.mu.Lock()
		defer b.unlock()
		if b.word.Load() != p.word || !b.releaseProbe(p.ticket, b.mono()) {
			return false // stale, or its lease expired
		}
		if o == Ignored {
			return false
		}
		if o == Success {
			b.succeeded++
		} else {
			b.failed++
			b.lastFailure = err
		}
		v := b.tracker.Probe(call, Probes{
			InFlight:  len(b.probes),
			Succeeded: b.succeeded,
			Failed:    b.failed,
			Max:       b.set.maxProbes,
		})
		switch v {
		case VerdictClose:
			b.enter(Closed, nil, time.Now())
		case VerdictReopen:
			cause := b.successCause(o)
			if cause == nil {
				cause = b.lastFailure
			}
			if cause == nil {
				cause = b.period.Load().cause
			}
			b.trip(HalfOpen, cause)
		}
		return true
	}
	return false // ForcedClosed: nothing is recorded
}

// successCauser is implemented by built-in trackers that can trip or
// re-open on a success for a reason of their own: successCause returns that
// reason for the decision just made, or nil.
type successCauser interface{ successCause() error }

// successCause returns the tracker's reason for a trip or re-open decided
// on an outcome o, if o is a success and the tracker gives one.
func (b *Breaker) successCause(o Outcome) error {
	if sc, ok := b.tracker.(successCauser); ok && o == Success {
		return sc.successCause()
	}
	return nil
}

// call builds the Call for a tracker, reading the clock only if asked to.
func (b *Breaker) call(p *Permit, o Outcome, err error) Call {
	c := Call{Outcome: o, Err: err}
	if b.timing != TimingNone {
		c.Now = time.Now()
		if b.timing == TimingLatency {
			// One clock read: Now carries the monotonic reading.
			c.Latency = c.Now.Sub(b.base) - time.Duration(p.start)
		}
	}
	return c
}

// releaseProbe removes the probe with ticket t and reports whether it was
// still in flight at now: false if its lease has expired, whether or not an
// acquire has reclaimed its slot yet. Called with mu held.
func (b *Breaker) releaseProbe(t uint64, now int64) bool {
	for i, p := range b.probes {
		if p.ticket == t {
			last := len(b.probes) - 1
			b.probes[i] = b.probes[last]
			b.probes = b.probes[:last]
			return p.expiry > now
		}
	}
	return false
}

// trip opens the breaker from Closed or HalfOpen. The cool-down starts
// again from ResetTimeout after Closed and grows after HalfOpen.
// Called with mu held.
func (b *Breaker) trip(from State, cause error) {
	if from == Closed {
		b.cooldown = b.set.cooldown
	} else {
		b.cooldown = b.set.next(b.cooldown)
	}
	b.enter(Open, cause, time.Now())
}

// enter moves the breaker to state to, bumps the epoch, publishes the new
// period and queues the transition for the listeners. at is the
// transition's wall-clock time. Called with mu held.
func (b *Breaker) enter(to State, cause error, at time.Time) {
	old := b.word.Load()
	w := (old>>epochShift+1)<<epochShift | old&(flagTimed|flagMade) | uint64(to)
	per := &period{word: w, cause: cause}
	switch to {
	case Open:
		if b.cooldown == Forever {
			per.until = never
			per.fixed = &OpenError{RetryAfter: Forever, Cause: cause}
		} else {
			per.until = addSat(b.mono(), b.cooldown)
		}
	case HalfOpen:
		per.fixed = &OpenError{Cause: cause}
		b.probes = b.probes[:0]
		b.succeeded, b.failed, b.lastFailure = 0, 0, nil
		b.tracker.Reset(HalfOpen)
	case ForcedOpen:
		per.fixed = &OpenError{RetryAfter: Forever, Cause: cause}
	case Closed:
		b.cooldown = b.set.cooldown
		b.lastFailure = nil
		b.tracker.Reset(Closed)
	}
	b.period.Store(per)
	b.word.Store(w)
	if stateOf(old) == to && to != ForcedOpen {
		return // a Reset that keeps the state: a new epoch, no transition
	}
	tr := Transition{From: stateOf(old), To: to, Time: at}
	if to == Open || to == ForcedOpen {
		tr.Cause = cause
	}
	b.queue = append(b.queue, tr)
}

// State returns a snapshot of the breaker. It does not change the
// state: an Open breaker whose cool-down has passed is reported as HalfOpen
// with no probes, although the transition itself happens on the next
// acquire. Safe for concurrent use; it takes the breaker's lock.
func (b *Breaker) State() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setUp()
	now := b.mono()
	per := b.period.Load()
	s := Snapshot{State: stateOf(b.word.Load())}
	switch s.State {
	case Closed:
		s.Counters = b.tracker.Counters()
	case Open:
		s.Cause = per.cause
		switch {
		case per.until == never:
			s.RetryAfter = Forever
		case now < per.until:
			s.RetryAfter = time.Duration(per.until - now)
		default:
			s.State = HalfOpen
		}
	case HalfOpen:
		s.Cause = per.cause
		for _, p := range b.probes {
			if p.expiry > now {
				s.ProbesInFlight++
			}
		}
		s.ProbesSucceeded, s.ProbesFailed = b.succeeded, b.failed
	case ForcedOpen:
		s.Cause, s.RetryAfter = per.cause, Forever
	}
	return s
}

// Reset closes the breaker, clears the policy's history and the growth of
// the cool-down, and starts a new epoch, so that no permit issued before
// the reset, probe or not, can change the state afterwards. Listeners
// see a transition to Closed unless the breaker was already Closed. While
// a [Switch] forces the breaker, Reset clears the history but leaves the
// forced state: the switch owns it until released. Safe for concurrent use.
func (b *Breaker) Reset() {
	b.mu.Lock()
	defer b.unlock()
	b.setUp()
	switch stateOf(b.word.Load()) {
	case ForcedOpen, ForcedClosed:
		b.cooldown = b.set.cooldown
		b.tracker.Reset(Closed)
	default:
		b.enter(Closed, nil, time.Now())
	}
}
