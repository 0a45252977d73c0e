package circuitbreaker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/ctxerr"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/observe"
)

const (
	// DefaultGroupMaxKeys is GroupConfig.MaxKeys when zero.
	DefaultGroupMaxKeys = 10_000
	// DefaultGroupIdleTimeout is GroupConfig.IdleTimeout when zero.
	DefaultGroupIdleTimeout = 10 * time.Minute
)

// GroupConfig configures a [Group]; zero fields select the defaults.
type GroupConfig struct {
	// Breaker configures every breaker of the group, named "Name/key"
	// ("key" when Name is empty; the overflow's key is "(overflow)"). Its
	// Clock also measures idle time; its Switch controls every breaker;
	// its Observer is also told of each breaker the group drops, by an
	// [observe.Removed] event with the breaker's name, reported after the
	// drop by the call that made it (a lookup of a new key, Len, States).
	Breaker Config
	// MaxKeys bounds how many breakers the group holds. Zero means
	// [DefaultGroupMaxKeys]; negative is an error.
	MaxKeys int
	// IdleTimeout is how long a breaker may go unused before the group
	// drops it. Zero means [DefaultGroupIdleTimeout]; [rampart.Forever] never
	// drops; other negatives are errors.
	IdleTimeout time.Duration
}

// Group holds one [Breaker] per key (host, method, tenant), created on
// demand (Envoy's outlier detection, Finagle's per-endpoint failure
// accrual); idle breakers are dropped unless Open or probing. The zero
// Group behaves as NewGroup(GroupConfig{}). A Group is safe for concurrent
// use and must not be copied after first use.
//
// A nil *Group holds no breaker: Breaker and Overflow return a nil
// *Breaker (whose TryAcquire returns an error, and over which a layer
// fails every call), Len is 0, States is nil, and Subscribe registers
// nothing. [NewGroupLayer] rejects a nil one when it is built (in an
// adapter's config, a nil Breakers field means no group).
type Group[K comparable] struct {
	cfg     Config
	maxKeys int
	idle    time.Duration
	// overflow is the breaker shared by the keys past maxKeys; its
	// monotonic clock (cfg.Clock's or the system's) also measures the
	// group's idle times (mono).
	overflow *Breaker

	// keys maps each held key to its *groupEntry[K]. It is read without
	// mu; it is written only with mu held, together with ring.
	keys sync.Map

	mu sync.Mutex
	// ring holds the entries of keys, in the order they were added.
	// Guarded by mu.
	ring []*groupEntry[K]
	// hand is the index in ring where the next search for room starts.
	// Guarded by mu.
	hand int
	// looked is when the group last looked at every key for idleness, a
	// mono reading. Guarded by mu.
	looked int64
	// dropped holds the breakers dropped and not yet reported to the
	// Observer as removed, when the breakers have an Observer. Guarded by
	// mu; reported after mu is released (reportDropped).
	dropped []*Breaker
	// changes delivers the group's changes to Subscribe's listeners,
	// pushed with mu held and flushed after it is released; seq numbers
	// them. seq is guarded by mu.
	changes dispatcher[groupEvent[K]]
	seq     uint64
}

// GroupChange is a breaker joining or leaving a [Group], as
// [Group.Subscribe] reports it.
type GroupChange[K comparable] struct {
	// Key is the key of the breaker.
	Key K
	// Breaker is the breaker the group made for Key, or dropped.
	Breaker *Breaker
	// Removed is false when the group made Breaker (its first lookup of
	// Key, or of Key again after a drop), true when it dropped it (idle,
	// or to make room: the drop an Observer sees as removed).
	Removed bool
}

// groupEvent is a change queued for the listeners: every listener
// subscribed before seq when to is nil, else only to's.
type groupEvent[K comparable] struct {
	change GroupChange[K]
	seq    uint64
	to     *byte
}

type groupEntry[K comparable] struct {
	key K
	b   *Breaker
	// used is set by a lookup and cleared when the group looks at the
	// entry. A lookup stores only when it is clear, so a hot key costs one
	// write per look, not one per call.
	used atomic.Bool
	// seen is when the group last knew the entry used: when it was added,
	// or the last look that found used set, a Group.mono reading.
	// Guarded by Group.mu.
	seen int64
}

// NewGroup returns an empty group configured by cfg, or an error naming the
// first bad field.
func NewGroup[K comparable](cfg GroupConfig) (*Group[K], error) {
	g := &Group[K]{}
	if err := g.init(cfg); err != nil {
		return nil, err
	}
	return g, nil
}

// init sets g up from cfg, or returns an error naming the first bad field.
// Called by NewGroup on a group nobody else sees yet, or by setUp with mu
// held.
func (g *Group[K]) init(cfg GroupConfig) error {
	switch {
	case cfg.MaxKeys < 0:
		return fmt.Errorf("circuitbreaker: GroupConfig.MaxKeys must be >= 0 (0 means %d), got %d", DefaultGroupMaxKeys, cfg.MaxKeys)
	case cfg.IdleTimeout < 0:
		return fmt.Errorf("circuitbreaker: GroupConfig.IdleTimeout must be >= 0 (0 means %v; rampart.Forever never drops), got %s", DefaultGroupIdleTimeout, durationString(cfg.IdleTimeout))
	}
	// The overflow breaker is also the check of cfg.Breaker.
	ocfg := cfg.Breaker
	ocfg.Name = keyName(cfg.Breaker.Name, "(overflow)")
	ocfg.member = &member{group: cfg.Breaker.Name, key: "(overflow)"}
	overflow, err := New(ocfg)
	if err != nil {
		return fmt.Errorf("%w (GroupConfig.Breaker)", err)
	}
	g.cfg = cfg.Breaker
	g.changes.onPanic, g.changes.name = cfg.Breaker.ListenerPanic, cfg.Breaker.Name
	g.maxKeys = cmp.Or(cfg.MaxKeys, DefaultGroupMaxKeys)
	g.idle = cmp.Or(cfg.IdleTimeout, DefaultGroupIdleTimeout)
	g.overflow = overflow
	return nil
}

// setUp sets up a zero Group on its first use as NewGroup(GroupConfig{})
// would, and does nothing to a group already set up. Called with mu held:
// every field it writes is read only with mu held, or (keys' entries) after
// a store made with mu held.
func (g *Group[K]) setUp() {
	if g.overflow == nil {
		// Cannot fail: the zero GroupConfig is valid, which the
		// zero-value tests check.
		_ = g.init(GroupConfig{})
	}
}

// mono returns the monotonic time in nanoseconds on the overflow
// breaker's clock, the Breaker config's Clock or the system's. Called on a
// group that is set up.
func (g *Group[K]) mono() int64 { return g.overflow.mono() }

// Breaker returns the breaker for key, creating it if needed. Use it for
// the call at hand only: the group may drop it later. A nil g returns
// nil.
func (g *Group[K]) Breaker(key K) *Breaker {
	if g == nil {
		return nil
	}
	if v, ok := g.keys.Load(key); ok {
		e := v.(*groupEntry[K])
		if !e.used.Load() {
			e.used.Store(true)
		}
		return e.b
	}
	b := g.add(key)
	g.reportDropped()
	g.changes.flush()
	return b
}

// drop notes that the group dropped b, to report it once mu is released.
// Called with mu held.
func (g *Group[K]) drop(key K, b *Breaker) {
	if g.cfg.Observer != nil {
		g.dropped = append(g.dropped, b)
	}
	g.change(GroupChange[K]{Key: key, Breaker: b, Removed: true})
}

// reportDropped reports each breaker dropped since the last report to its
// Observer as removed, without holding mu: an Observer may take its own
// locks, or look at the group.
func (g *Group[K]) reportDropped() {
	if g.cfg.Observer == nil { // set up by the caller's own locked section
		return
	}
	g.mu.Lock()
	dropped := g.dropped
	g.dropped = nil
	g.mu.Unlock()
	for _, b := range dropped {
		b.observe(context.Background(), observe.Removed, nil, 0)
	}
}

// add is Breaker for a key that was not held at the lookup.
func (g *Group[K]) add(key K) *Breaker {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.keys.Load(key); ok { // added since the lookup
		e := v.(*groupEntry[K])
		e.used.Store(true)
		return e.b
	}
	g.setUp() // a zero Group's first key
	now := g.mono()
	if now-g.looked >= int64(g.idle/4) {
		g.look(now)
	}
	if len(g.ring) >= g.maxKeys && !g.makeRoom(now) {
		return g.overflow
	}
	cfg := g.cfg
	cfg.Name = keyName(g.cfg.Name, key)
	cfg.member = &member{group: g.cfg.Name, key: fmt.Sprint(key)}
	b, err := New(cfg)
	if err != nil {
		// Only a Policy whose NewTracker fails after succeeding once
		// gets here: the key shares the overflow breaker.
		return g.overflow
	}
	e := &groupEntry[K]{key: key, b: b, seen: now}
	g.ring = append(g.ring, e)
	g.keys.Store(key, e)
	g.change(GroupChange[K]{Key: key, Breaker: b})
	return b
}

// change queues c for the listeners. Called with mu held.
func (g *Group[K]) change(c GroupChange[K]) {
	g.seq++
	g.changes.push(groupEvent[K]{change: c, seq: g.seq})
}

// Subscribe registers f for every change of the group's breakers: each
// breaker it holds now, reported first as made (so that f sees every
// breaker the group holds), then each one it makes or drops, in order,
// one at a time. f runs without the group's lock (it may call the group)
// on the goroutine whose lookup made or dropped the breaker (Breaker,
// Len, States), before that call returns unless another goroutine is
// delivering changes already (that one delivers this change too); it is
// on that caller's path and must return at once. Subscribe returns a
// function that removes f; a change being delivered when it is called
// may still reach f. A nil f is ignored, and so is any f for a nil g; a
// panic in f goes to the
// Breaker config's ListenerPanic. The breaker of the keys past MaxKeys
// ([Group.Overflow]) is not reported. Safe for concurrent use.
func (g *Group[K]) Subscribe(f func(GroupChange[K])) (unsubscribe func()) {
	if f == nil || g == nil {
		return func() {}
	}
	g.mu.Lock()
	g.setUp()
	since := g.seq
	me := new(byte)
	unsubscribe = g.changes.subscribe(func(ev groupEvent[K]) {
		if ev.to == me || ev.to == nil && ev.seq > since {
			f(ev.change)
		}
	})
	for _, e := range g.ring {
		g.changes.push(groupEvent[K]{change: GroupChange[K]{Key: e.key, Breaker: e.b}, to: me})
	}
	g.mu.Unlock()
	g.changes.flush()
	return unsubscribe
}

// keyName is the Name of the breaker for key in a group whose Config is
// named group: "group/key", or "key" for an unnamed group.
func keyName(group string, key any) string {
	if group == "" {
		return fmt.Sprint(key)
	}
	return group + "/" + fmt.Sprint(key)
}

// look drops every entry that has been idle for g.idle and can be dropped,
// and notes the use of the others. The hand stays on the entry it was on,
// or moves to the next one kept. Called with mu held.
func (g *Group[K]) look(now int64) {
	g.looked = now
	kept, hand := g.ring[:0], -1
	for i, e := range g.ring {
		if i == g.hand {
			hand = len(kept)
		}
		if e.used.Load() {
			e.used.Store(false)
			e.seen = now
		} else if now-e.seen >= int64(g.idle) && idleDroppable(e.b) {
			g.keys.CompareAndDelete(e.key, e)
			g.drop(e.key, e.b)
			continue
		}
		kept = append(kept, e)
	}
	clear(g.ring[len(kept):])
	g.ring = kept
	if hand < 0 {
		hand = len(kept)
	}
	g.hand = hand
}

// idleDroppable reports whether an idle breaker can be dropped: Closed or
// forced, or past its cool-down with no probe in flight.
func idleDroppable(b *Breaker) bool {
	switch s := b.State(); s.State {
	case Closed, ForcedOpen, ForcedClosed:
		return true
	case HalfOpen:
		return s.ProbesInFlight == 0
	}
	return false
}

// makeRoom drops one entry that is Closed or forced and not used since it
// was last looked at, searching from the hand as CLOCK does: an entry
// found used loses its mark and is passed over once. It reports whether
// it dropped one. Called with mu held.
func (g *Group[K]) makeRoom(now int64) bool {
	for range 2 * len(g.ring) {
		if g.hand >= len(g.ring) {
			g.hand = 0
		}
		e := g.ring[g.hand]
		if e.used.Load() {
			e.used.Store(false)
			e.seen = now
			g.hand++
			continue
		}
		switch stateOf(e.b.word.Load()) {
		case Closed, ForcedOpen, ForcedClosed:
			g.keys.CompareAndDelete(e.key, e)
			g.drop(e.key, e.b)
			g.ring = slices.Delete(g.ring, g.hand, g.hand+1)
			return true
		}
		g.hand++
	}
	return false
}

// Len returns how many breakers the group holds, not counting overflow;
// 0 for a nil g.
func (g *Group[K]) Len() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	g.setUp()
	g.look(g.mono())
	n := len(g.ring)
	g.mu.Unlock()
	g.reportDropped()
	g.changes.flush()
	return n
}

// KeyState is one key's breaker state, as [Group.States] reports it.
type KeyState[K comparable] struct {
	Key K
	Snapshot
}

// States returns the state of every breaker held, oldest key first; nil
// for a nil g.
func (g *Group[K]) States() []KeyState[K] {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	g.setUp()
	g.look(g.mono())
	ring := slices.Clone(g.ring)
	g.mu.Unlock()
	g.reportDropped()
	g.changes.flush()
	out := make([]KeyState[K], len(ring))
	for i, e := range ring {
		out[i] = KeyState[K]{Key: e.key, Snapshot: e.b.State()}
	}
	return out
}

// Overflow returns the breaker shared by the keys past MaxKeys; nil for a
// nil g.
func (g *Group[K]) Overflow() *Breaker {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setUp()
	return g.overflow
}

// NewGroupLayer is [NewLayer] with g's breaker for key(req), judging each
// call with classify (nil judges by the error alone); key must be safe for
// concurrent use. A nil g or key is an error.
func NewGroupLayer[Req, Resp any, K comparable](g *Group[K], key func(Req) K, classify Classifier[Resp]) (rampart.Layer[Req, Resp], error) {
	switch {
	case g == nil:
		return nil, errors.New("circuitbreaker: group layer: nil *Group (build one with circuitbreaker.NewGroup)")
	case key == nil:
		return nil, errors.New("circuitbreaker: group layer: nil key func")
	}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		if nilservice.Is(inner) {
			return rampart.Failing[Req, Resp]("circuitbreaker: group layer Wrap")
		}
		return &groupService[Req, Resp, K]{g: g, key: key, classify: classify, inner: inner}
	}), nil
}

// groupService is the group layer's service, one cache line (see service).
type groupService[Req, Resp any, K comparable] struct {
	g        *Group[K]
	key      func(Req) K
	classify Classifier[Resp]
	inner    rampart.Service[Req, Resp]
	_        [cacheLine - 40]byte
}

func (s *groupService[Req, Resp, K]) Call(ctx context.Context, req Req) (Resp, error) {
	if ctx.Err() != nil {
		var zero Resp
		return zero, ctxerr.Reason(ctx)
	}
	// The layer's service for this key's breaker, on the stack.
	one := service[Req, Resp]{b: s.g.Breaker(s.key(req)), classify: s.classify, inner: s.inner}
	return one.Call(ctx, req)
}
