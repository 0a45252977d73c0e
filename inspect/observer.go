package inspect

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart/observe"
)

// recordKey names a layer, as its events do.
type recordKey struct {
	source observe.Source
	name   string
}

// record is what the Observer keeps for one layer: a breaker's last
// transition, and the refusals of any layer.
type record struct {
	refused atomic.Int64
	since   time.Time // guarded by the Registry's mu
	state   string    // guarded by the Registry's mu; the state entered at since
}

// Observer returns the observer that tells the page what the layers'
// values do not keep themselves: since when each breaker is in its state
// (from its creation, or its latest transition), the latest transitions
// with their causes, and how many calls each breaker, budget and
// concurrency limit refused. It also wakes an open page when a layer's
// settings are tuned at run time (an [observe.Tuned] event), as it does
// at a transition. Give it to their Configs, beside any other
// observer, with observe.Join:
//
//	obs := observe.Join(metrics, reg.Observer())
//	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: obs})
//
// It is an [observe.Binder]: a breaker or budget built with it holds its
// own record, so a call's outcome costs a check of the event's kind and a
// refusal one atomic add, with no lookup; a concurrency limit's refusal
// (its layer does not bind) is looked up by name. Breakers that share a
// name share a record. A breaker a group drops (an [observe.Removed]
// event) leaves its record. A transition's time is when the Observer is
// told of it, by the system's clock; a breaker whose cool-down has ended
// is told of its move to half-open by the next call that finds it so.
// Safe for concurrent use.
func (r *Registry) Observer() observe.Observer {
	if r == nil {
		return nil
	}
	return (*observer)(r)
}

// observer is the Registry's unbound Observer.
type observer Registry

// bound is the Registry's Observer bound to one layer.
type bound struct {
	r   *Registry
	rec *record
}

// Bind returns the observer of the layer of source and name, holding its
// record.
func (o *observer) Bind(source observe.Source, name string) observe.Observer {
	r := (*Registry)(o)
	return &bound{r: r, rec: r.record(recordKey{source, name}, true)}
}

// Observe handles an event of a layer that did not bind.
func (o *observer) Observe(_ context.Context, e observe.Event) {
	switch e.Kind {
	case observe.Rejected, observe.Refused, observe.BudgetRefused, observe.Transition, observe.Removed:
	case observe.Tuned:
		(*Registry)(o).tuned()
		return
	default:
		return
	}
	r := (*Registry)(o)
	r.handle(r.record(recordKey{e.Source, e.Name}, e.Kind != observe.Removed), e)
}

// Observe handles an event of the layer b is bound to.
func (b *bound) Observe(_ context.Context, e observe.Event) {
	switch e.Kind {
	case observe.Rejected, observe.Refused, observe.BudgetRefused:
		b.rec.refused.Add(1)
	case observe.Transition, observe.Removed:
		b.r.handle(b.rec, e)
	case observe.Tuned:
		b.r.tuned()
	}
}

// tuned counts a layer's settings changed at run time (an [observe.Tuned]
// event: a breaker's cool-down or policy, a limiter's Max or bounds, a
// budget's ratio) as a change, so that an open page reads what they
// changed at once.
func (r *Registry) tuned() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.change()
}

// record returns the record of k, creating it when create is set (and
// nil otherwise, when there is none).
func (r *Registry) record(k recordKey, create bool) *record {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.records[k]
	if rec == nil && create {
		if r.records == nil {
			r.records = map[recordKey]*record{}
		}
		rec = &record{since: time.Now(), state: "closed"}
		r.records[k] = rec
	}
	return rec
}

// handle applies e, one of the kinds the Observer keeps, to rec (nil for
// a Removed event of a layer without a record).
func (r *Registry) handle(rec *record, e observe.Event) {
	switch e.Kind {
	case observe.Rejected, observe.Refused, observe.BudgetRefused:
		rec.refused.Add(1)
	case observe.Removed:
		r.mu.Lock()
		defer r.mu.Unlock()
		k := recordKey{e.Source, e.Name}
		if rec == nil || r.records[k] == rec {
			delete(r.records, k)
		}
	case observe.Transition:
		if e.From == e.To && e.To == "open" {
			// The end of an Open moved by the fleet's record: no
			// transition to list, but the page's cool-down changed.
			r.mu.Lock()
			defer r.mu.Unlock()
			r.change()
			return
		}
		t := Transition{Time: time.Now().UTC(), Name: e.Name, From: e.From, To: e.To}
		if e.Err != nil {
			t.Cause = e.Err.Error()
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.records[recordKey{e.Source, e.Name}] == nil {
			if r.records == nil {
				r.records = map[recordKey]*record{}
			}
			r.records[recordKey{e.Source, e.Name}] = rec // a record dropped by a Removed of a breaker of the same name
		}
		rec.since, rec.state = t.Time, t.To
		r.push(t)
	}
}

// push adds t to the ring of transitions. Called with mu held.
func (r *Registry) push(t Transition) {
	if r.ring == nil {
		if r.size == 0 {
			r.size = DefaultTransitions
		}
		r.ring = make([]Transition, r.size)
	}
	r.ring[r.next] = t
	r.next++
	if r.next == len(r.ring) {
		r.next, r.full = 0, true
	}
	r.change()
}

// transitions returns the ring's transitions, newest first.
func (r *Registry) transitions() []Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.full {
		n = len(r.ring)
	}
	ts := make([]Transition, 0, n)
	for i := range n {
		ts = append(ts, r.ring[(r.next-1-i+len(r.ring))%len(r.ring)])
	}
	return ts
}
