package rampartotel

import (
	"context"
	"maps"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
)

// overflowKey is the key of a Group's overflow breaker, which is always
// aggregated under the group's name.
const overflowKey = "(overflow)"

// breakerStates are the states the breaker metrics report, by
// circuitbreaker.State's names, in the order of the record's arrays.
var breakerStates = [numStates]string{
	circuitbreaker.Closed.String(), circuitbreaker.Open.String(), circuitbreaker.HalfOpen.String(),
	circuitbreaker.ForcedOpen.String(), circuitbreaker.ForcedClosed.String(),
}

const (
	numStates   = 5
	closedIdx   = 0
	openIdx     = 1
	halfOpenIdx = 2
)

// stateIndex returns the index of the state named s in breakerStates, and
// false for a name that is none of them.
func stateIndex(s string) (int, bool) {
	for i, name := range breakerStates {
		if name == s {
			return i, true
		}
	}
	return 0, false
}

// automatic are the transitions a breaker makes by itself, whose
// rampart.breaker.transitions series exist (at zero) from the moment a
// breaker is bound; the others (forcing) appear when they first happen.
var automatic = [][2]int{{0, 1}, {1, 2}, {2, 0}, {2, 1}}

// recordKey identifies a record: a breaker name, or a group's name and a
// key with series of its own (keyed).
type recordKey struct {
	name, key string
	keyed     bool
}

// record holds the series of the breakers bound to one name (a lone
// breaker, breakers that share a Name, or a Group's breakers aggregated
// under the Group's name), or of one key of a Group with series of its
// own. Calls are counted with atomics and read by the callbacks, so that
// a call's outcome costs one atomic add rather than an SDK measurement.
// Successes, one per call, are striped over cache lines so that parallel
// calls do not contend for one line (the idea of budget's deposits).
type record struct {
	id                         recordKey
	attrs                      []attribute.KeyValue // rampart.layer, rampart.name[, rampart.key]
	failure, ignored, rejected atomic.Int64

	// Guarded by Observer.mu: refs counts the breakers bound to the
	// record and not removed; in, how many of them are in each state;
	// since, the sum of the times (Observer.now) at which they entered
	// it; spent, the time spent in each state by breakers that have left
	// it (or been removed); moves, the transitions by from and to.
	refs  int
	in    [numStates]int64
	since [numStates]int64
	spent [numStates]int64
	moves [numStates][numStates]int64
	// cooling holds the record's breakers that are open with a finite
	// cool-down, until they are seen past its end (see promote).
	cooling map[*boundBreaker]struct{}

	success [successStripes]stripe
}

// successStripes is how many lines a record's successes are spread over.
const successStripes = 16

// stripe is a counter alone on its cache line (128 bytes keep the
// adjacent-line prefetcher from pairing two).
type stripe struct {
	n atomic.Int64
	_ [120]byte
}

// addSuccess counts one success on the calling goroutine's stripe.
func (r *record) addSuccess() {
	r.success[stripeOf()].n.Add(1)
}

// successes returns the successes counted so far.
func (r *record) successes() int64 {
	var n int64
	for i := range r.success {
		n += r.success[i].n.Load()
	}
	return n
}

// stripeOf picks the calling goroutine's stripe: a hash of the address of
// a local variable, which lies in the goroutine's own stack, so that a
// goroutine keeps its stripe (and its core keeps the line) while its stack
// does not move. The address is only hashed, never dereferenced.
func stripeOf() uint32 {
	var local byte
	h := uint64(uintptr(unsafe.Pointer(&local))>>11) * 0x9E3779B97F4A7C15 // Fibonacci hashing
	return uint32(h>>32) % successStripes
}

// boundBreaker is the Observer of one breaker, bound to its record: it
// knows the breaker's state, so that the record counts its breakers by
// state and the time they spend in each.
type boundBreaker struct {
	o   *Observer
	rec *record
	// Guarded by Observer.mu: the state the breaker is counted in, since
	// when (Observer.now); when open and in its record's cooling, when
	// its cool-down ends; promoted, that it is counted half-open from the
	// end of its cool-down and has not yet reported the transition.
	state    int
	entered  int64
	ready    int64
	promoted bool
	removed  atomic.Bool
}

// Observe counts a call's outcome in b's record, and hands the other
// events on. An untimed success (one per call) and a rejection are one
// check and one atomic add here (and a rejection's span event); the rest
// is observeEvent's, given the event by address so that it is not copied
// again.
func (b *boundBreaker) Observe(ctx context.Context, e observe.Event) {
	switch {
	case e.Kind == observe.Success && e.Duration == 0:
		if !b.o.closed.Load() {
			b.rec.addSuccess()
		}
	case e.Kind == observe.Rejected:
		if !b.o.closed.Load() {
			b.rec.rejected.Add(1)
			if b.o.spans {
				addSpanEvent(ctx, &e)
			}
		}
	default:
		b.observeEvent(ctx, &e)
	}
}

// observeEvent is Observe for any event but an untimed success or a
// rejection.
func (b *boundBreaker) observeEvent(ctx context.Context, e *observe.Event) {
	o := b.o
	if o.closed.Load() {
		return
	}
	switch e.Kind {
	case observe.Success:
		b.rec.addSuccess()
		o.recordDuration(ctx, e, b.rec)
	case observe.Failure:
		b.rec.failure.Add(1)
		if e.Duration > 0 {
			o.recordDuration(ctx, e, b.rec)
		}
	case observe.Ignored:
		b.rec.ignored.Add(1)
	case observe.Removed:
		if !b.removed.Swap(true) {
			o.unbind(b)
		}
	case observe.Transition:
		o.move(b, e)
	default:
		o.observe(ctx, *e)
	}
}

// now is the Observer's clock for the time spent in states, in
// nanoseconds since it was created.
func (o *Observer) now() int64 { return int64(time.Since(o.start)) }

// Bind returns the Observer for the events of one layer (see
// [observe.Binder]). For a circuit breaker, it is an Observer bound to the
// record of the breaker's name, so that a call's outcome costs one atomic
// add and no lookup; for the other layers, o itself. Safe for concurrent
// use.
func (o *Observer) Bind(source observe.Source, name string) observe.Observer {
	if o == nil || !o.made {
		return nil // a nil or zero Observer: no events
	}
	if o.none {
		return o.spanOnly()
	}
	if source == observe.Budget {
		// The refusals counter the alert rules read exists, at zero, from
		// the budget's creation: a counter born at its first refusals
		// shows Prometheus's rate and increase nothing of them.
		o.budgetRefusals.Add(context.Background(), 0, o.opts(setKey{source: source, name: name}).add...)
	}
	if source != observe.Breaker {
		return o
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bindLocked(recordKey{name: name})
}

// BindMember returns the Observer of the breaker for key of the
// circuitbreaker.Group named group (see [observe.MemberBinder]): bound to
// the group's record, under the group's name, unless [Config.KeySeries]
// leaves room for the key's own series. Safe for concurrent use.
func (o *Observer) BindMember(source observe.Source, group, key, name string) observe.Observer {
	if o == nil || !o.made {
		return nil // a nil or zero Observer: no events
	}
	if o.none {
		return o.spanOnly()
	}
	if source != observe.Breaker {
		return o
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if key != overflowKey && o.keySeries > 0 {
		k := recordKey{name: group, key: key, keyed: true}
		if o.records[k] != nil || o.keyed < o.keySeries {
			return o.bindLocked(k)
		}
	}
	return o.bindLocked(recordKey{name: group})
}

// bindLocked binds a new breaker, Closed, to the record of k, creating it.
// Called with o.mu held.
func (o *Observer) bindLocked(k recordKey) *boundBreaker {
	r := o.records[k]
	if r == nil {
		r = &record{id: k, attrs: []attribute.KeyValue{KeyLayer.String(observe.Breaker.String()), KeyName.String(k.name)}}
		if k.keyed {
			r.attrs = append(r.attrs, KeyKey.String(k.key))
			o.keyed++
		}
		o.records[k] = r
	}
	r.refs++
	o.peak = max(o.peak, len(o.records))
	b := &boundBreaker{o: o, rec: r}
	o.enter(b, closedIdx, o.now())
	return b
}

// move records a transition of b's breaker.
func (o *Observer) move(b *boundBreaker, e *observe.Event) {
	to, ok := stateIndex(e.To)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if b.removed.Load() {
		return
	}
	now := o.now()
	o.promote(b, now)
	if e.From == e.To && to == openIdx {
		o.rearm(b, time.Duration(e.Duration), now)
		return
	}
	if b.promoted && to == halfOpenIdx {
		b.promoted = false // the transition promote counted at the cool-down's end
		return
	}
	b.promoted = false
	b.rec.moves[b.state][to]++
	o.leave(b, now)
	o.enter(b, to, now)
	if d := int64(e.Duration); to == openIdx && d > 0 && d < math.MaxInt64-now {
		b.ready = now + d
		if b.rec.cooling == nil {
			b.rec.cooling = make(map[*boundBreaker]struct{})
		}
		b.rec.cooling[b] = struct{}{}
	}
}

// rearm applies the new end of an Open that the fleet's record moved
// (a Transition from open to open, which is no change of state): b's
// breaker is open for d from now, counted open again if it was counted
// half-open at the old end (it let no call through: it was not), in which
// case the transition counted then stays counted (a counter does not go
// back) and the one at the new end counts too. Called with o.mu held.
func (o *Observer) rearm(b *boundBreaker, d time.Duration, now int64) {
	if b.promoted && b.state == halfOpenIdx {
		b.promoted = false
		o.leave(b, now)
		o.enter(b, openIdx, now)
	}
	if b.state != openIdx {
		return
	}
	delete(b.rec.cooling, b)
	if d >= 0 && int64(d) < math.MaxInt64-now { // zero: the Open ends now (the round granted to this replica)
		b.ready = now + int64(d)
		if b.rec.cooling == nil {
			b.rec.cooling = make(map[*boundBreaker]struct{})
		}
		b.rec.cooling[b] = struct{}{}
	}
}

// promote counts b's breaker half-open from the end of its cool-down when
// it is open and now is past that end: the breaker lets the next call
// through as a probe, and reports the transition only then, but an
// operator looking at the state gauge between the two should see what
// Breaker.State reports, half-open, not a breaker that refuses. The
// transition and the time per state are counted as of the cool-down's
// end, by the Observer's clock. Called with o.mu held.
func (o *Observer) promote(b *boundBreaker, now int64) {
	if b.state != openIdx {
		return
	}
	if _, cooling := b.rec.cooling[b]; !cooling || now < b.ready {
		return
	}
	delete(b.rec.cooling, b)
	b.rec.moves[openIdx][halfOpenIdx]++
	o.leave(b, b.ready)
	o.enter(b, halfOpenIdx, b.ready)
	b.promoted = true
}

// enter puts b's breaker in state to at now. Called with o.mu held.
func (o *Observer) enter(b *boundBreaker, to int, now int64) {
	if b.state == openIdx {
		delete(b.rec.cooling, b)
	}
	b.state, b.entered = to, now
	b.rec.in[to]++
	b.rec.since[to] += now
}

// leave takes b's breaker out of its state at now, adding the time it
// spent there. Called with o.mu held.
func (o *Observer) leave(b *boundBreaker, now int64) {
	r := b.rec
	r.in[b.state]--
	r.since[b.state] -= b.entered
	r.spent[b.state] += now - b.entered
}

// unbind removes b's breaker from its record, and forgets the record
// (its series, its attribute sets) once no breaker is bound to it.
func (o *Observer) unbind(b *boundBreaker) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.leave(b, o.now())
	r := b.rec
	delete(r.cooling, b)
	r.refs--
	if r.refs > 0 || o.records[r.id] != r {
		return
	}
	o.forget(r)
}

// forget drops r and the attribute sets of its name. Called with o.mu
// held.
func (o *Observer) forget(r *record) {
	delete(o.records, r.id)
	if n := len(o.records); n < o.peak/4 {
		records := make(map[recordKey]*record, n)
		maps.Copy(records, o.records)
		o.records, o.peak = records, n
	}
	if r.id.keyed {
		o.keyed--
		return // the sets are the group's, which stays
	}
	old := *o.sets.Load()
	sets := make(map[setKey]*options, len(old))
	for k, v := range old {
		if k.source != observe.Breaker || k.name != r.id.name {
			sets[k] = v
		}
	}
	o.sets.Store(&sets)
}

// observeBreakers reports the breakers' observable instruments: calls by
// outcome, breakers by state, time by state and transitions.
func (o *Observer) observeBreakers(_ context.Context, obs metric.Observer) error {
	o.mu.Lock() // promote writes
	defer o.mu.Unlock()
	now := o.now()
	for _, r := range o.records {
		for b := range r.cooling {
			o.promote(b, now)
		}
		with := func(kv ...attribute.KeyValue) metric.MeasurementOption {
			return metric.WithAttributes(append(kv, r.attrs...)...)
		}
		for _, oc := range [...]struct {
			outcome observe.Kind
			n       int64
		}{
			{observe.Success, r.successes()}, {observe.Failure, r.failure.Load()},
			{observe.Ignored, r.ignored.Load()}, {observe.Rejected, r.rejected.Load()},
		} {
			obs.ObserveInt64(o.calls, oc.n, with(KeyOutcome.String(oc.outcome.String())))
		}
		for i, st := range breakerStates {
			obs.ObserveInt64(o.state, r.in[i], with(KeyBreakerState.String(st)))
			spent := r.spent[i] + r.in[i]*now - r.since[i]
			obs.ObserveFloat64(o.stateTime, time.Duration(spent).Seconds(), with(KeyBreakerState.String(st)))
		}
		for from := range numStates {
			for to := range numStates {
				n := r.moves[from][to]
				if n == 0 && !isAutomatic(from, to) {
					continue
				}
				obs.ObserveInt64(o.transitions, n, with(KeyBreakerFrom.String(breakerStates[from]), KeyBreakerTo.String(breakerStates[to])))
			}
		}
	}
	return nil
}

// isAutomatic reports whether from → to is a transition a breaker makes by
// itself.
func isAutomatic(from, to int) bool {
	for _, a := range automatic {
		if a == [2]int{from, to} {
			return true
		}
	}
	return false
}

// spanOnly is what a layer bound to an Observer whose MeterProvider is
// the no-op one reports to: nothing without span events, so that the
// layer pays as if it had no Observer; else an Observer that only adds
// span events.
func (o *Observer) spanOnly() observe.Observer {
	if !o.spans {
		return nil
	}
	return spanEvents{}
}

// spanEvents adds the events of calls to their spans, and records no
// metric.
type spanEvents struct{}

func (s spanEvents) Observe(ctx context.Context, e observe.Event) {
	if s.Wants(e.Kind) {
		addSpanEvent(ctx, &e)
	}
}

// Wants reports whether events of kind k become span events: not a
// breaker's outcomes, transitions or removal, so that a breaker does not
// report its successes to an Observer that only adds span events.
func (spanEvents) Wants(k observe.Kind) bool {
	switch k {
	case observe.Success, observe.Failure, observe.Ignored, observe.Transition, observe.Removed:
		return false
	}
	return true
}
