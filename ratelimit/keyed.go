package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/observe"
)

// DefaultMaxKeys is the number of keys a [Keyed] holds when
// KeyedConfig.MaxKeys is zero.
const DefaultMaxKeys = 10_000

// KeyedConfig configures a [Keyed]. The zero value is not valid: Limit is
// required.
type KeyedConfig struct {
	// Limit is each key's rate, in tokens per second. Required: it must be
	// greater than 0 and less than rate.Inf.
	Limit rate.Limit
	// Burst is each key's bucket size: how many calls a key that has been
	// idle may make at once. Zero means 1. It must not be negative.
	Burst int
	// MaxKeys bounds how many keys are held at once. Zero means
	// [DefaultMaxKeys]. It must not be negative.
	MaxKeys int
	// Clock, when set, is the time the keys' limiters and waiting lines
	// run on, as [Config.Clock] describes for one limiter; the limiters
	// [Keyed.Limiter] returns must then be used only through the layers.
	// Nil means the system's clock, read directly.
	Clock clock.Clock

	// Name names the Keyed in the events of the layers built with it.
	// Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each call a layer built with the
	// Keyed refuses or makes wait, as [Config.Observer] is for
	// [NewLayer]. See package observe.
	Observer observe.Observer
}

// Keyed holds one [*rate.Limiter] per key (per user, per tenant, per client
// address), all with the same limit and burst, in bounded memory. It is
// shared state: every layer built with the same Keyed draws from the same
// per-key buckets. A Keyed is safe for concurrent use; one mutex guards the
// set of keys, held only to find, add or drop a key.
//
// # Eviction
//
// A key's limiter is dropped once its bucket is full again and no call of
// a layer is between looking it up and taking its token, or waits for it
// (see [NewKeyedLayer]). A full bucket is exactly how a new
// limiter starts, so dropping it changes no decision: the next call for
// that key gets a new limiter that allows what the old one would have. Each lookup checks the least recently used key and drops
// it if full, repeating until it finds one that is not, so dropping costs
// O(1) per lookup on average and needs no background goroutine.
//
// If a new key arrives while MaxKeys keys are held, the least recently used
// key is dropped even if its bucket is not full, and its next call gets a
// full bucket: a flood of distinct keys can let a key through early, but
// memory stays bounded. Calls already waiting for a dropped key keep their
// line; calls that arrive later form a new one. A limiter that
// [Keyed.Limiter] returned and that is dropped before its caller uses it
// still hands out tokens to that caller, which the new limiter for the
// key does not know about: use it for the decision at hand. The layers'
// calls hold their key from the lookup to the token, so only the MaxKeys
// drop above makes a layer call take a token that the key's next
// limiter does not count.
//
// The zero Keyed holds no keys and grants no tokens: its Limiter returns a
// new limiter that refuses every event, its Len is 0, and [NewKeyedLayer]
// refuses it. Make a Keyed with [NewKeyed]. A nil *Keyed is the same.
type Keyed struct {
	limit   rate.Limit
	burst   int
	maxKeys int
	clk     clock.Clock
	name    string
	obs     observe.Observer

	mu   sync.Mutex
	keys map[string]*entry // guarded by mu
	// lru links the entries of keys, most recently used after it, least
	// recently used before it. guarded by mu
	lru entry
}

type entry struct {
	key string
	q   queue // the key's limiter and the calls waiting for it
	// users counts the layer calls between their lookup of the entry and
	// the end of their take: an entry with users is not full, so it is
	// not dropped before they have taken their tokens from it.
	users      atomic.Int32
	prev, next *entry // guarded by Keyed.mu
}

// NewKeyed returns an empty Keyed configured by cfg. It returns an error
// naming the first invalid field.
func NewKeyed(cfg KeyedConfig) (*Keyed, error) {
	if !(cfg.Limit > 0) || cfg.Limit >= rate.Inf {
		return nil, fmt.Errorf("ratelimit: Limit must be > 0 and < rate.Inf, got %v", cfg.Limit)
	}
	if cfg.Burst < 0 {
		return nil, fmt.Errorf("ratelimit: Burst must be >= 0 (0 means 1), got %d", cfg.Burst)
	}
	if cfg.MaxKeys < 0 {
		return nil, fmt.Errorf("ratelimit: MaxKeys must be >= 0 (0 means DefaultMaxKeys, %d), got %d", DefaultMaxKeys, cfg.MaxKeys)
	}
	if err := nilvalue.Field("ratelimit: Clock", cfg.Clock); err != nil {
		return nil, err
	}
	k := &Keyed{limit: cfg.Limit, burst: max(cfg.Burst, 1), maxKeys: cfg.MaxKeys, clk: cfg.Clock, keys: make(map[string]*entry), name: cfg.Name, obs: cfg.Observer}
	if k.maxKeys == 0 {
		k.maxKeys = DefaultMaxKeys
	}
	k.lru.prev, k.lru.next = &k.lru, &k.lru
	return k, nil
}

// Limiter returns key's limiter, creating it with a full bucket if key is
// not held, and marks key as just used. The limiter is shared with every
// other caller for key until it is dropped (see Eviction on [Keyed]); use
// it for the decision at hand, not longer.
func (k *Keyed) Limiter(key string) *rate.Limiter {
	if k == nil || k.keys == nil { // a nil or zero Keyed; keys never changes after NewKeyed
		return rate.NewLimiter(0, 0)
	}
	return k.entry(key, false).q.lim
}

// entry returns key's entry, as [Keyed.Limiter] documents; with use, it
// counts one more user of the entry (see entry.users) before it lets go of
// the lock, and the caller must subtract it when done.
func (k *Keyed) entry(key string, use bool) *entry {
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.keys[key]
	if ok {
		k.unlink(e)
	} else {
		if len(k.keys) >= k.maxKeys {
			k.drop(k.lru.prev)
		}
		e = &entry{key: key, q: queue{lim: rate.NewLimiter(k.limit, k.burst), clk: k.clk}}
		k.keys[key] = e
	}
	if use {
		e.users.Add(1)
	}
	// Link e as most recently used.
	e.prev, e.next = &k.lru, k.lru.next
	e.prev.next, e.next.prev = e, e
	for old := k.lru.prev; old != e && k.full(old, now); old = k.lru.prev {
		k.drop(old)
	}
	return e
}

// take takes one token for a layer's call from key's limiter, holding the
// key from the lookup to the end of the take.
func (k *Keyed) take(ctx context.Context, key string, mode Mode) error {
	e := k.entry(key, true)
	defer e.users.Add(-1)
	return take(ctx, &e.q, mode, k.name, k.obs)
}

// Len returns how many keys are held, after dropping every key whose
// bucket is full again.
func (k *Keyed) Len() int {
	if k == nil || k.keys == nil { // a nil or zero Keyed
		return 0
	}
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	for e := k.lru.next; e != &k.lru; {
		next := e.next
		if k.full(e, now) {
			k.drop(e)
		}
		e = next
	}
	return len(k.keys)
}

// now returns the time to pass to the keys' limiters.
func (k *Keyed) now() time.Time {
	return clockNow(k.clk)
}

func (k *Keyed) full(e *entry, now time.Time) bool {
	return e.users.Load() == 0 && e.q.n.Load() == 0 && e.q.lim.TokensAt(now) >= float64(k.burst)
}

func (k *Keyed) unlink(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (k *Keyed) drop(e *entry) {
	k.unlink(e)
	delete(k.keys, e.key)
}

// NewKeyedLayer returns a layer that takes one token, before each call,
// from the limiter that k holds for key(req). It behaves as [NewLayer]
// does with that limiter: the same modes, errors, context handling and
// line of waiting calls, which here is one line per key, shared by every
// layer built with k.
// key must be safe for concurrent use; calls with equal keys share a bucket.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewKeyedLayer returns an error when k or key is nil, k is a zero Keyed
// (not made by [NewKeyed]), or mode is not Wait or Refuse.
func NewKeyedLayer[Req, Resp any](k *Keyed, key func(Req) string, mode Mode) (rampart.Layer[Req, Resp], error) {
	if k == nil {
		return nil, errors.New("ratelimit: keyed limiter must not be nil")
	}
	if k.keys == nil {
		return nil, errors.New("ratelimit: keyed limiter must be made by NewKeyed, got a zero Keyed")
	}
	if key == nil {
		return nil, errors.New("ratelimit: key must not be nil")
	}
	if err := checkMode(mode); err != nil {
		return nil, err
	}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		if nilservice.Is(inner) {
			return rampart.Failing[Req, Resp]("ratelimit: Wrap")
		}
		return &keyedService[Req, Resp]{inner: inner, keyed: k, key: key, mode: mode}
	}), nil
}

type keyedService[Req, Resp any] struct {
	inner rampart.Service[Req, Resp]
	keyed *Keyed
	key   func(Req) string
	mode  Mode
}

func (s *keyedService[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if err := s.keyed.take(ctx, s.key(req), s.mode); err != nil {
		var zero Resp
		return zero, err
	}
	return s.inner.Call(ctx, req)
}
