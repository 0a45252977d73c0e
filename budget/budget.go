package budget

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/observe"
)

// Defaults for the zero fields of [Config]. They are Finagle's RetryBudget
// defaults, which years of production use at Twitter settled on.
const (
	// DefaultWindow is how long a deposit counts: long enough to smooth
	// bursts, short enough that credit earned before an outage is gone
	// soon after it starts.
	DefaultWindow = 10 * time.Second
	// DefaultMinPerSecond is the floor: enough retries for a client with
	// little traffic (where a ratio of almost nothing is nothing) to ride
	// out a blip, too few to hurt a dependency.
	DefaultMinPerSecond = 10
	// DefaultRatio lets retries add at most 20% to the load: a failing
	// dependency sees 1.2 times its traffic, not MaxAttempts times.
	DefaultRatio = 0.2
)

// NoFloor is the value of [Config.MinPerSecond] for a budget without a
// floor: retries are then bounded by Ratio alone, and a budget that has seen
// no requests allows none.
const NoFloor = -1

// Limits on [Config] fields, which keep the fixed-point arithmetic far from
// overflow.
const (
	// MinWindow is the shortest Window: Finagle's and Tower's lower limit.
	MinWindow = time.Second
	// MaxWindow is the longest Window: Finagle's and Tower's upper limit.
	MaxWindow = time.Minute
	// MaxMinPerSecond is the largest MinPerSecond, in retries per second.
	MaxMinPerSecond = 1_000_000
	// MinRatio is the smallest Ratio, the fixed-point resolution: one
	// millionth of a retry per request.
	MinRatio = 1.0 / unit
	// MaxRatio is the largest Ratio, in retries per request: beyond it a
	// budget bounds nothing that MaxAttempts does not.
	MaxRatio = 100.0
)

// unit is the fixed-point scale: one retry costs unit, and a deposit earns
// Ratio*unit rounded down (see earnings). Ratios with up to six decimals
// are therefore exact: Ratio 0.1 earns exactly one retry per ten requests.
const unit = 1_000_000

// slots is how many time slots a window is cut into, as in Tower's
// TpsBudget: credit expires one tenth of a window at a time.
const slots = 10

// maxStripes bounds the pending-deposit counters.
const maxStripes = 64

// Config configures a [Budget]. Every zero field takes its documented
// default, so Config{} gives the same budget as a zero [Budget].
type Config struct {
	// Window is how long a deposit's credit lasts. Zero means
	// [DefaultWindow]; otherwise it must be within [MinWindow, MaxWindow]
	// (Finagle's and Tower's limits).
	Window time.Duration
	// MinPerSecond is the floor: retries per second allowed whatever the
	// traffic, averaged over the window. A new budget holds a full window
	// of it (MinPerSecond*Window), and it refills at MinPerSecond per
	// second. Zero means [DefaultMinPerSecond]; [NoFloor] means none;
	// otherwise it must be within [0, MaxMinPerSecond].
	MinPerSecond int
	// Ratio is the retries each request earns: 0.2 allows one retry per
	// five requests. Zero means [DefaultRatio]; otherwise it must be within
	// [MinRatio, MaxRatio]. It is rounded down to six decimal places, never
	// up, so a budget never allows more retries than asked: 0.0000015 earns
	// what 0.000001 does, and a Ratio written with at most six decimals is
	// exact.
	Ratio float64

	// Clock, when set, is the time the budget runs on: its slots turn at
	// the clock's monotonic readings and its timer is the clock's
	// AfterFunc, so a budget can be replayed on virtual time (see package
	// sim). Only [clock.Clock.Monotonic] is read; a step of the wall
	// clock moves nothing. Nil means the system's clock, read directly.
	// Deposit reads no clock either way.
	Clock clock.Clock

	// Name names the budget in its events. Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each withdrawal the budget
	// refuses (an [observe.BudgetRefused] event, with
	// [context.Background]: a withdrawal belongs to no call). See package
	// observe.
	Observer observe.Observer
}

// Budget bounds retries to a share of recent traffic plus a floor, after
// Finagle's RetryBudget and Tower's TpsBudget: every request deposits,
// every retry withdraws, a retry that was withdrawn but not sent is
// refunded, and credit expires after the window.
//
// The zero Budget is ready to use and is the default budget, as New(Config{})
// returns it: its window starts, full of floor credit, at its first use
// (any method). Use [New] for other settings. A Budget must not be copied
// after first use.
//
// # Accounting
//
// Credit is kept in fixed point (one retry is a million units). Time is cut
// into 10 slots per window. Each slot brings MinPerSecond*Window/10 of floor
// credit, and each deposit adds Ratio of a retry to its slot. The balance
// is what may be withdrawn now: it is never negative, and never more than
// the credit of the live slots (the floor of a full window plus Ratio times
// the deposits of the last Window; see [Budget.Refund] for the one
// exception). Withdrawals spend the oldest credit first; when a slot
// leaves the window, whatever is left of its credit goes with it; a
// refund puts a withdrawal back. So over any span of time, retries sent
// (withdrawals not refunded) never exceed the floor earned in it plus one
// window of floor, plus Ratio times the deposits.
//
// # Cost
//
// [Budget.Deposit] runs on every request, so it reads no clock (time.Now
// costs more than the rest of Deposit): it checks an atomic
// flag and adds one to one of several cache-line-padded counters (one per
// P, up to 64), chosen by the calling goroutine, so parallel deposits
// rarely share a line. A timer, armed only while deposits arrive, folds the
// counters into the balance at each slot boundary, so deposits are
// credited to the slot they were made in (one made at the very instant a
// slot turns may count toward the slot that ends, expiring a slot early);
// after a slot with no deposit the timer stops, and the next deposit
// re-arms it. [Budget.Withdraw], [Budget.Refund] and [Budget.Balance]
// read the clock, turn any slots that have ended, fold the counters, and
// Withdraw takes from the balance (Refund adds to it) in a
// compare-and-swap loop, so concurrent withdrawals never overdraw. The
// mutex is taken only when a slot turns, the timer is re-armed, or a zero
// Budget is first used. Neither Deposit nor Withdraw allocates
// (measurements: bench/README.md).
//
// A Budget runs on the system's clock, or on [Config.Clock] when set.
//
// A Budget is safe for concurrent use; share one among every caller of a
// dependency. Inside a testing/synctest bubble, create and use it within
// the same bubble (its timer belongs to the bubble that first deposits).
//
// A nil *Budget holds no credit and earns none: Deposit and Refund do
// nothing, Withdraw reports false, Balance is 0, and Tune is an error.
// The layers that take a *Budget reject a nil one when they are built.
type Budget struct {
	// Read by every Deposit; written only at construction, except ticking,
	// which changes at most twice per idle spell. Kept apart from the
	// fields Withdraw writes, so a retry storm does not evict this line
	// from the depositors' caches.

	// stripes count deposits not yet folded into balance, striped so that
	// parallel deposits do not share a cache line. There are 8 stripes per
	// P (up to maxStripes), so two goroutines running at once land on the
	// same stripe with probability about 1/(8·GOMAXPROCS), not 1/GOMAXPROCS.
	stripes []stripe
	mask    uint32 // len(stripes)-1, a power of two minus one
	// ticking is true while the timer is armed; a Deposit that sees it
	// false arms it (wake).
	ticking atomic.Bool
	// ready is true once the fields below it and the stripes are set: by
	// New, or by the first use of a zero Budget (under mu). Everything that
	// reads them without mu first loads ready or ticking, both stored
	// after the fields are written.
	ready   atomic.Bool
	earn    atomic.Int64  // units a deposit earns (changed only by Tune)
	reserve int64         // floor units per window; guarded by mu after setup (Tune)
	slotLen time.Duration // Window / slots
	window  time.Duration
	// Slot n covers [n*slotLen, (n+1)*slotLen) of the time elapsed since
	// start (the system's clock) or since startMono (clk, when set).
	start     time.Time
	startMono time.Duration
	clk       clock.Clock
	name      string
	obs       observe.Observer
	_         [128]byte

	// balance is the units that may be withdrawn now. It only shrinks by a
	// compare-and-swap that keeps it >= 0, and at slot turns to the live
	// credit, so it is never negative.
	balance atomic.Int64
	// fresh is the credit folded during the current slot, moved into
	// credit[cur%slots] when the slot turns.
	fresh atomic.Int64
	// cur is the number of the current slot, written under mu.
	cur atomic.Int64
	// live is the credit of the live slots at the last slot turn, written
	// under mu: balance never exceeds live plus fresh, and Refund keeps
	// it so.
	live atomic.Int64

	mu     sync.Mutex
	credit [slots]int64 // guarded by mu: credit of the live slots, by slot number % slots
	timer  *time.Timer  // guarded by mu: nil until the first wake; unused with clk
}

// stripe is a pending-deposit counter alone on its cache line (128 bytes
// also keeps the adjacent-line prefetcher from pairing two).
type stripe struct {
	n atomic.Int64
	_ [120]byte
}

// New validates cfg, fills its defaults and returns a Budget holding a
// full window of floor credit (MinPerSecond*Window retries) and no ratio
// credit. It returns an error naming the field and stating its accepted
// values if a field is out of range.
func New(cfg Config) (*Budget, error) {
	if err := nilvalue.Field("budget: Clock", cfg.Clock); err != nil {
		return nil, err
	}
	window, perSecond, ratio, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	b := &Budget{clk: cfg.Clock, name: cfg.Name, obs: observe.Bind(cfg.Observer, observe.Budget, cfg.Name)}
	b.setup(window, perSecond, ratio)
	return b, nil
}

// resolve validates the Window, MinPerSecond and Ratio of cfg and returns
// them with their defaults filled in (perSecond 0 for NoFloor), or the
// error New returns.
func resolve(cfg Config) (window time.Duration, perSecond int, ratio float64, err error) {
	window, perSecond, ratio = cfg.Window, cfg.MinPerSecond, cfg.Ratio
	switch {
	case window == 0:
		window = DefaultWindow
	case window < MinWindow || window > MaxWindow:
		return 0, 0, 0, fmt.Errorf("budget: Window must be 0 (the default, %v) or between %v and %v, got %v", DefaultWindow, MinWindow, MaxWindow, window)
	}
	switch {
	case perSecond == 0:
		perSecond = DefaultMinPerSecond
	case perSecond == NoFloor:
		perSecond = 0
	case perSecond < 0 || perSecond > MaxMinPerSecond:
		return 0, 0, 0, fmt.Errorf("budget: MinPerSecond must be 0 (the default, %d per second), NoFloor (%d, no floor) or between 1 and %d, got %d", DefaultMinPerSecond, NoFloor, MaxMinPerSecond, perSecond)
	}
	switch {
	case ratio == 0:
		ratio = DefaultRatio
	case !(ratio >= MinRatio && ratio <= MaxRatio): // also catches NaN
		return 0, 0, 0, fmt.Errorf("budget: Ratio must be 0 (the default, %v) or between %v and %v, got %v", DefaultRatio, MinRatio, MaxRatio, ratio)
	}
	return window, perSecond, ratio, nil
}

// setup sets b's parameters from validated settings, fills its window with
// floor credit and marks it ready. It runs before b is shared (in New) or
// with mu held (on a zero Budget's first use).
func (b *Budget) setup(window time.Duration, perSecond int, ratio float64) {
	n := uint32(1)
	for n < maxStripes && n < 8*uint32(runtime.GOMAXPROCS(0)) {
		n *= 2
	}
	b.earn.Store(earnings(ratio))
	b.reserve = reserveOf(perSecond, window)
	b.slotLen = window / slots
	b.window = window
	if b.clk != nil {
		b.startMono = b.clk.Monotonic()
	} else {
		b.start = time.Now()
	}
	b.mask = n - 1
	b.stripes = make([]stripe, n)
	for i := range b.credit {
		b.credit[i] = b.floor(i)
	}
	b.balance.Store(b.reserve)
	b.live.Store(b.reserve)
	b.ready.Store(true) // publishes the fields above
}

// setupZero makes a zero Budget the default budget on its first use.
// Called with mu held.
func (b *Budget) setupZero() {
	if !b.ready.Load() {
		b.setup(DefaultWindow, DefaultMinPerSecond, DefaultRatio)
	}
}

// reserveOf returns the floor credit of a window, in units: perSecond
// retries a second for window.
func reserveOf(perSecond int, window time.Duration) int64 {
	return int64(perSecond) * int64(window) / (int64(time.Second) / unit)
}

// earnings returns the units a deposit earns at ratio: ratio*unit rounded
// down, so that rounding never allows more retries than asked. The product
// is computed in floating point, so it is first rounded to the nearest
// integer n; n is kept when n/unit is ratio itself (ratio has at most six
// decimals: 0.3*unit may come out a hair below 300000) and lowered by one
// when it was rounded up from a ratio with more decimals.
func earnings(ratio float64) int64 {
	r := ratio * unit
	n := math.Round(r)
	if n/unit != ratio && n > r {
		n--
	}
	return int64(n)
}

// floor returns the floor credit of the slot stored at index i: the window's
// reserve split into slots parts whose sum is exactly the reserve.
func (b *Budget) floor(i int) int64 {
	return b.reserve*int64(i+1)/slots - b.reserve*int64(i)/slots
}

// Deposit records one request, earning Ratio of a retry for the next
// Window. It neither blocks nor allocates, and reads no clock except when
// the first deposit after an idle slot arms the timer.
func (b *Budget) Deposit() {
	if b == nil {
		return
	}
	if !b.ticking.Load() {
		b.wake()
	}
	b.stripes[stripeOf(b.mask)].n.Add(1)
}

// stripeOf picks the calling goroutine's stripe: a hash of the address of
// a local variable, which lies in the goroutine's own stack. Goroutine
// stacks are at least 2 KiB apart, so different goroutines tend to get
// different stripes, and a goroutine keeps its stripe (and the stripe's
// cache line stays in its core's cache) for as long as its stack does not
// move. A random stripe per call would make every core write every line.
// The address is only hashed, never dereferenced, so a moved stack merely
// changes the stripe.
func stripeOf(mask uint32) uint32 {
	var local byte
	h := uint64(uintptr(unsafe.Pointer(&local))>>11) * 0x9E3779B97F4A7C15 // Fibonacci hashing
	return uint32(h>>32) & mask
}

// Withdraw takes one retry from the balance and reports whether there was
// one. It never blocks on other withdrawals and never overdraws: after any
// interleaving of concurrent calls, the successful ones together took no
// more than the balance held. It does not allocate.
func (b *Budget) Withdraw() bool {
	if b == nil {
		return false
	}
	b.sync()
	for {
		old := b.balance.Load()
		if old < unit {
			if b.obs != nil {
				b.obs.Observe(context.Background(), observe.Event{Source: observe.Budget, Name: b.name, Kind: observe.BudgetRefused})
			}
			return false
		}
		if b.balance.CompareAndSwap(old, old-unit) {
			return true
		}
	}
}

// Refund gives back one retry that Withdraw granted but that was not sent
// (the retry layer calls it when the caller's context ended during the
// backoff or a circuit breaker refused the retry): the budget pays only
// for retries that were sent. A refund does not raise the balance above
// the credit still live: if the credit the withdrawal spent has expired
// since, or the balance is already full, nothing comes back (a refund that
// races with the turn of a slot may leave one retry above it until the
// next turn). Calling Refund
// without a matching successful Withdraw adds unearned credit up to that
// limit. It never blocks on other calls and does not allocate.
func (b *Budget) Refund() {
	if b == nil {
		return
	}
	b.sync()
	for {
		// live is stored before a turn lowers balance, so a refund racing
		// with a turn reads the new limit, or reads the old one and its
		// compare-and-swap fails if the turn lowered balance in between.
		// Only a turn that left balance unchanged (it was already within
		// the new live credit) lets a refund computed on the old limit
		// through: balance then exceeds the live credit by at most one
		// retry per racing refund, until the next turn trims it.
		old := b.balance.Load()
		next := min(old+unit, b.live.Load()+b.fresh.Load())
		if next <= old || b.balance.CompareAndSwap(old, next) {
			return
		}
	}
}

// Balance returns how many retries may be withdrawn now, with the fraction
// earned toward the next one (9 deposits at Ratio 0.1 and no floor give
// 0.9). It is meant for tests and metrics.
func (b *Budget) Balance() float64 {
	if b == nil {
		return 0
	}
	b.sync()
	return float64(b.balance.Load()) / unit
}

// sync brings the balance up to date: it turns the slots up to now and
// folds pending deposits.
func (b *Budget) sync() {
	if !b.ready.Load() {
		b.mu.Lock()
		b.setupZero()
		b.mu.Unlock()
	}
	now := b.elapsed()
	if b.slotAt(now) != b.cur.Load() {
		b.mu.Lock()
		b.advance(now)
		b.mu.Unlock()
	}
	b.fold()
}

// elapsed returns the monotonic time since the budget's start.
func (b *Budget) elapsed() time.Duration {
	if b.clk != nil {
		return b.clk.Monotonic() - b.startMono
	}
	return time.Since(b.start)
}

// slotAt returns the number of the slot holding e, a time elapsed since
// the budget's start.
func (b *Budget) slotAt(e time.Duration) int64 {
	return int64(e / b.slotLen)
}

// fold moves pending deposits into the balance and the current slot's
// fresh credit, and returns how many there were. It runs without the mutex:
// a fold racing with a slot turn may credit its deposits to the new slot,
// which keeps them a little longer but never makes balance negative.
// fresh is added before balance, so balance never exceeds the credit a
// concurrent turn can see.
func (b *Budget) fold() int64 {
	var n int64
	for i := range b.stripes {
		if b.stripes[i].n.Load() != 0 {
			n += b.stripes[i].n.Swap(0)
		}
	}
	if n > 0 {
		c := n * b.earn.Load()
		b.fresh.Add(c)
		b.balance.Add(c)
	}
	return n
}

// advance turns the slots up to the one holding now, and reports whether
// the slot that ended saw any deposit. Pending deposits count toward the
// slot that ends. Called with mu held.
func (b *Budget) advance(now time.Duration) (active bool) {
	active = b.fold() > 0
	cur, n := b.cur.Load(), b.slotAt(now)
	if n <= cur {
		return active
	}
	fresh := b.fresh.Swap(0)
	active = active || fresh != 0
	b.credit[cur%slots] += fresh
	var added int64
	for s := max(cur+1, n-slots+1); s <= n; s++ {
		i := int(s % slots)
		b.credit[i] = b.floor(i) // replaces the expired slot s-slots
		added += b.credit[i]
	}
	var live int64
	for _, c := range b.credit {
		live += c
	}
	b.cur.Store(n)
	b.live.Store(live)
	// Oldest credit is spent first, so what is left of an expired slot is
	// the part of the balance beyond the live credit: min drops it.
	for {
		old := b.balance.Load()
		if b.balance.CompareAndSwap(old, min(old+added, live)) {
			return active
		}
	}
}

// wake arms the timer after an idle spell, first bringing the slots up to
// date.
func (b *Budget) wake() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ticking.Load() {
		return
	}
	b.setupZero()
	now := b.elapsed()
	b.advance(now)
	b.ticking.Store(true)
	b.arm(now)
}

// arm sets the timer for the end of the current slot. Called with mu held.
func (b *Budget) arm(now time.Duration) {
	d := time.Duration(b.cur.Load()+1)*b.slotLen - now
	switch {
	case b.clk != nil:
		// A clock's Timer cannot be reset: take a new one. The previous
		// one has fired (arm runs at a wake, when no timer is pending, or
		// in tick, from the timer itself).
		b.clk.AfterFunc(d, b.tick)
	case b.timer == nil:
		b.timer = time.AfterFunc(d, b.tick)
	default:
		b.timer.Reset(d)
	}
}

// tick runs at each slot boundary while deposits arrive: it folds them into
// the slot that ended and turns the slots. After a slot without deposits it
// stops; the next Deposit wakes it.
func (b *Budget) tick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.elapsed()
	if b.advance(now) {
		b.arm(now)
		return
	}
	b.ticking.Store(false)
	// A Deposit that saw ticking still true has added to a stripe without
	// waking; keep ticking for it.
	for i := range b.stripes {
		if b.stripes[i].n.Load() != 0 {
			b.ticking.Store(true)
			b.arm(now)
			return
		}
	}
}
