package inspect

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/observe"
)

// DefaultTransitions is Config.Transitions when zero.
const DefaultTransitions = 50

// MaxTransitions is the largest Config.Transitions.
const MaxTransitions = 10_000

// Config configures a Registry. The zero Config selects the defaults.
type Config struct {
	// Transitions is how many of the latest breaker transitions the
	// Registry's Observer keeps for the page, oldest dropped first. Zero
	// means [DefaultTransitions]; otherwise within [1, MaxTransitions].
	Transitions int
}

// Registry holds what the program registered for the page: breakers,
// groups, budgets, limiters and fleets, in the order they were added,
// and the latest transitions its Observer was told of. It is also the
// [http.Handler] of the page (see ServeHTTP).
//
// Registering is explicit: nothing is added by itself, and a value
// registered is read only when the page or Status is asked for, through
// the methods the value already has (Breaker.State, Group.States,
// Budget.Balance, a limiter's limit and in-flight count), so a call
// through a registered value costs what it costs without the Registry.
// A Registry holds its values until their remove function is called.
//
// The zero Registry is ready to use with the defaults of Config. A
// Registry is safe for concurrent use and must not be copied after first
// use. A nil *Registry holds nothing and never will: the Add methods and
// [AddGroup] register nothing and return a remove function that does
// nothing, Observer returns nil (no Observer), and Status and ServeHTTP
// show an empty Registry.
type Registry struct {
	mu      sync.Mutex
	entries []*entry       // guarded by mu; in the order added
	byValue map[any]*entry // guarded by mu; the value registered → its entry

	records map[recordKey]*record // guarded by mu; what the Observer keeps per layer
	ring    []Transition          // guarded by mu; a ring of the latest transitions
	next    int                   // guarded by mu; where the next transition goes in ring
	full    bool                  // guarded by mu; ring has wrapped
	size    int                   // guarded by mu; the ring's capacity, set by New or on first use

	version uint64        // guarded by mu; the count of changes an open page is told of at once
	changed chan struct{} // guarded by mu; closed at the next change, nil until a page waits
}

// entry is one registered value: status reads it for the page.
type entry struct {
	kind   kind
	status func(ctx context.Context, r *Registry, s *Status)
}

type kind uint8

const (
	kindBreaker kind = iota
	kindGroup
	kindBudget
	kindLimiter
	kindFleet
)

// New returns an empty Registry configured by cfg, or an error naming the
// bad field.
func New(cfg Config) (*Registry, error) {
	if cfg.Transitions < 0 || cfg.Transitions > MaxTransitions {
		return nil, fmt.Errorf("inspect: Config.Transitions must be within [0, %d], got %d", MaxTransitions, cfg.Transitions)
	}
	r := &Registry{size: cfg.Transitions}
	return r, nil
}

// add registers v, replacing (in place) an earlier registration of the
// same value, and returns the function that removes it.
func (r *Registry) add(v any, e *entry) (remove func()) {
	if r == nil {
		return noop
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byValue == nil {
		r.byValue = map[any]*entry{}
	}
	if old, ok := r.byValue[v]; ok {
		i := slices.Index(r.entries, old)
		r.entries[i] = e
	} else {
		r.entries = append(r.entries, e)
	}
	r.byValue[v] = e
	r.change()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		cur, ok := r.byValue[v]
		if !ok {
			return // removed already
		}
		delete(r.byValue, v)
		r.entries = slices.DeleteFunc(r.entries, func(x *entry) bool { return x == cur })
		r.change()
	}
}

// change counts a change an open page is told of at once (a value added
// or removed, a transition, a setting tuned), waking the pages that wait
// for one. Called with mu held.
func (r *Registry) change() {
	r.version++
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// changes returns the count of the Registry's changes.
func (r *Registry) changes() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version
}

// wait returns the count of the Registry's changes once it is not after,
// or at the latest when d has passed or ctx is done, with the count
// then.
func (r *Registry) wait(ctx context.Context, after uint64, d time.Duration) uint64 {
	r.mu.Lock()
	if r.version != after {
		defer r.mu.Unlock()
		return r.version
	}
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	changed := r.changed
	r.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version
}

// noop is the remove function of a value that was not registered.
func noop() {}

// AddBreaker shows b on the page under its Config.Name, and returns the
// function that removes it (idempotent; any of b's remove functions
// removes b). Adding b again keeps its place. A nil b is ignored. Safe for concurrent use.
func (r *Registry) AddBreaker(b *circuitbreaker.Breaker) (remove func()) {
	if b == nil {
		return noop
	}
	return r.add(b, &entry{kind: kindBreaker, status: func(_ context.Context, r *Registry, s *Status) {
		s.Breakers = append(s.Breakers, r.breakerStatus(b.State(), ""))
	}})
}

// AddGroup shows the breakers g holds on the page, under name (g's
// GroupConfig.Breaker.Name, say), one row per key (as fmt.Sprint prints
// it), oldest key first, and returns the function that removes g. A
// breaker the group drops leaves the page with it; the group's overflow
// breaker is shown, under the key "(overflow)", while it is not Closed
// or has counted something. A nil g is ignored. Safe for concurrent use.
func AddGroup[K comparable](r *Registry, name string, g *circuitbreaker.Group[K]) (remove func()) {
	if r == nil || g == nil {
		return noop
	}
	return r.add(g, &entry{kind: kindGroup, status: func(_ context.Context, r *Registry, s *Status) {
		states := g.States()
		gs := GroupStatus{Name: name, Breakers: make([]BreakerStatus, 0, len(states)+1)}
		for _, ks := range states {
			gs.Breakers = append(gs.Breakers, r.breakerStatus(ks.Snapshot, fmt.Sprint(ks.Key)))
		}
		if o := g.Overflow().State(); o.State != circuitbreaker.Closed || o.Counts != (circuitbreaker.Counts{}) {
			gs.Breakers = append(gs.Breakers, r.breakerStatus(o, "(overflow)"))
		}
		s.Groups = append(s.Groups, gs)
	}})
}

// AddBudget shows b's balance on the page under name (b's Config.Name,
// say), and returns the function that removes it. A nil b is ignored.
// Safe for concurrent use.
func (r *Registry) AddBudget(name string, b *budget.Budget) (remove func()) {
	if b == nil {
		return noop
	}
	return r.add(b, &entry{kind: kindBudget, status: func(_ context.Context, r *Registry, s *Status) {
		s.Budgets = append(s.Budgets, BudgetStatus{
			Name: name, Balance: b.Balance(), Refused: r.refused(observe.Budget, name),
		})
	}})
}

// AddLimiter shows l's limit and calls in flight on the page under name
// (the name its layers are given, say), and returns the function that
// removes it. l is a *concurrency.Limiter or a *concurrency.AdaptiveLimiter
// (the only Slots there are); a nil l, or a nil pointer of either type, is
// ignored. Safe for concurrent use.
func (r *Registry) AddLimiter(name string, l concurrency.Slots) (remove func()) {
	if l == nil || isNil(l) {
		return noop
	}
	return r.add(l, &entry{kind: kindLimiter, status: func(_ context.Context, r *Registry, s *Status) {
		ls := LimiterStatus{Name: name, Refused: r.refused(observe.Concurrency, name)}
		switch l := l.(type) {
		case *concurrency.Limiter:
			ls.Kind, ls.Limit, ls.InFlight = "fixed", l.Max(), l.InFlight()
		case *concurrency.AdaptiveLimiter:
			ls.Kind, ls.Limit, ls.InFlight = "adaptive", l.Limit(), l.InFlight()
			ls.BaselineSeconds = l.Baseline().Seconds()
		}
		s.Limiters = append(s.Limiters, ls)
	}})
}

// breakerStatus is the page's row for snap (key is the group key, if any),
// with what the Observer keeps for the breaker's name.
func (r *Registry) breakerStatus(snap circuitbreaker.Snapshot, key string) BreakerStatus {
	bs := BreakerStatus{
		Name:                snap.Name,
		Key:                 key,
		State:               snap.State.String(),
		ConsecutiveFailures: snap.Counts.ConsecutiveFailures,
		Calls:               snap.Counts.Calls,
		Failures:            snap.Counts.Failures,
		SlowCalls:           snap.Counts.SlowCalls,
		ProbesInFlight:      snap.ProbesInFlight,
		ProbesSucceeded:     snap.ProbesSucceeded,
		ProbesFailed:        snap.ProbesFailed,
		Remote:              snap.Remote,
	}
	switch {
	case snap.RetryAfter == rampart.Forever:
		bs.RetryAfterSeconds = -1
	case snap.RetryAfter > 0:
		bs.RetryAfterSeconds = snap.RetryAfter.Seconds()
	}
	if snap.Cause != nil {
		bs.Cause = snap.Cause.Error()
	}
	r.mu.Lock()
	if rec := r.records[recordKey{observe.Breaker, snap.Name}]; rec != nil {
		if rec.state == bs.State { // not a HalfOpen that no call has seen yet
			bs.Since = rec.since.UTC()
		}
		bs.Rejected = rec.refused.Load()
	}
	r.mu.Unlock()
	return bs
}

// refused returns the refusals the Observer counted for the layer of
// source and name.
func (r *Registry) refused(source observe.Source, name string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.records[recordKey{source, name}]; rec != nil {
		return rec.refused.Load()
	}
	return 0
}

// Status returns what the page shows now: every registered value's state,
// in the order each kind was added, and the latest transitions, newest
// first. ctx bounds the reads of fleets (a Fleet's Records); the other
// values are read from memory. Safe for concurrent use; it never blocks a
// call through a registered value.
func (r *Registry) Status(ctx context.Context) Status {
	if r == nil {
		r = new(Registry)
	}
	r.mu.Lock()
	entries := slices.Clone(r.entries)
	r.mu.Unlock()
	s := Status{
		Time:     time.Now().UTC(),
		Breakers: []BreakerStatus{},
		Groups:   []GroupStatus{},
		Budgets:  []BudgetStatus{},
		Limiters: []LimiterStatus{},
		Fleets:   []FleetStatus{},
	}
	for _, e := range entries { // read without r.mu: a group may report a drop to the Observer
		e.status(ctx, r, &s)
	}
	s.Transitions = r.transitions()
	return s
}

// isNil reports whether v is an interface holding a nil pointer.
func isNil(v any) bool { return nilvalue.Is(v) }
