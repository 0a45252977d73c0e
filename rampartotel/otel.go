package rampartotel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"unsafe"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// ScopeName is the instrumentation scope of the metrics: the meter's name.
const ScopeName = "github.com/rampart-go/rampart/rampartotel"

// Attribute keys, as documented in the package's table.
const (
	KeyLayer         = attribute.Key("rampart.layer")
	KeyOutcome       = attribute.Key("rampart.outcome")
	KeyName          = attribute.Key("rampart.name")
	KeyBreakerFrom   = attribute.Key("rampart.breaker.from")
	KeyBreakerTo     = attribute.Key("rampart.breaker.to")
	KeyBreakerState  = attribute.Key("rampart.breaker.state")
	KeyRetryReason   = attribute.Key("rampart.retry.reason")
	KeyRetryStop     = attribute.Key("rampart.retry.stop")
	KeyHedgeWinner   = attribute.Key("rampart.hedge.winner")
	KeyLimitAdmitted = attribute.Key("rampart.limit.admitted")
	// Span event attributes.
	KeyAttempt  = attribute.Key("rampart.attempt")
	KeyDuration = attribute.Key("rampart.duration")
	KeyError    = attribute.Key("rampart.error")
)

// breakerStates are the states the rampart.breaker.state gauge reports,
// by circuitbreaker.State's names.
var breakerStates = []string{
	circuitbreaker.Closed.String(), circuitbreaker.Open.String(), circuitbreaker.HalfOpen.String(),
	circuitbreaker.ForcedOpen.String(), circuitbreaker.ForcedClosed.String(),
}

// secondsBuckets are the bucket boundaries of the histograms in seconds:
// those OpenTelemetry's semantic conventions give http.server.request.duration,
// from 5ms to 10s.
var secondsBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Config configures an [Observer].
type Config struct {
	// MeterProvider provides the meter of the metrics. Nil means the
	// global provider (otel.GetMeterProvider()).
	MeterProvider metric.MeterProvider

	// NoSpanEvents, when true, adds no events to spans. False (the
	// default) adds each event of a call to the span active in the call's
	// context, when it is recording.
	NoSpanEvents bool
}

// Observer is an [observe.Observer] that records metrics and span events
// from the events of rampart's layers, as the package documentation lists.
// Create one with [New]; one Observer serves every layer. Safe for
// concurrent use. It keeps a record per breaker name and the attribute
// sets of each combination it has seen, and forgets a breaker's when a
// circuitbreaker.Group drops it (see the package documentation,
// "Cardinality").
type Observer struct {
	spans bool

	transitions, retries, ends, budgetRefusals, timeouts   metric.Int64Counter
	hedgesSent, hedgeWins, limitRefusals, fallbacks, joins metric.Int64Counter
	attempts                                               metric.Int64Histogram
	retryDelay, limitWait                                  metric.Float64Histogram

	callDuration metric.Float64Histogram

	// last is the breaker an unbound call event last looked up:
	// consecutive events of one breaker through the unbound Observer find
	// it without a map lookup. A bound breaker's events never look.
	last atomic.Pointer[callCounts]

	mu sync.RWMutex
	// calls holds the record of each breaker (by name) that is bound to
	// the Observer or has reported an event to it. Guarded by mu; the
	// counts themselves are atomic.
	calls map[string]*callCounts
	// sets holds the measurement options of each attribute combination
	// seen, so that an event builds no attribute set. The map is never
	// changed once stored: a new combination stores a copy, with mu held,
	// so that a lookup is one atomic load and takes no lock.
	sets atomic.Pointer[map[setKey]*options]
}

// callCounts is the record of one breaker: its calls by outcome, counted
// with atomics and read by the rampart.breaker.calls callback, so that a
// call's outcome costs one atomic add rather than an SDK measurement, and
// its state. Successes, one per call, are striped over cache lines so that
// parallel calls do not contend for one line (the idea of budget's
// deposits).
type callCounts struct {
	name                       string
	failure, ignored, rejected atomic.Int64
	// state is the state the breaker last entered, "" before its first
	// transition. Guarded by Observer.mu.
	state string
	// refs counts the breakers bound to this record (Bind) that have not
	// been removed. Guarded by Observer.mu.
	refs    int
	success [successStripes]stripe
}

// successStripes is how many lines a breaker's successes are spread over.
const successStripes = 16

// stripe is a counter alone on its cache line (128 bytes keep the
// adjacent-line prefetcher from pairing two).
type stripe struct {
	n atomic.Int64
	_ [120]byte
}

// addSuccess counts one success on the calling goroutine's stripe.
func (c *callCounts) addSuccess() {
	c.success[stripeOf()].n.Add(1)
}

// successes returns the successes counted so far.
func (c *callCounts) successes() int64 {
	var n int64
	for i := range c.success {
		n += c.success[i].n.Load()
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

// setKey identifies an attribute set: the layer, its name, up to two
// more string attributes (k1=s1, k2=s2, when the keys are set) and
// rampart.limit.admitted (when limit is set).
type setKey struct {
	source          observe.Source
	name            string
	k1, k2          attribute.Key
	s1, s2          string
	limit, admitted bool
}

// options are the prebuilt options for one attribute set.
type options struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// New returns an Observer recording into cfg.MeterProvider's meter named
// [ScopeName]. It returns an error when an instrument cannot be created.
func New(cfg Config) (*Observer, error) {
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(ScopeName)
	o := &Observer{spans: !cfg.NoSpanEvents, calls: make(map[string]*callCounts)}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	seconds := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(secondsBuckets...))
		errs = append(errs, err)
		return h
	}
	o.transitions = counter("rampart.breaker.transitions", "{transition}", "Transitions of circuit breakers between states.")
	o.retries = counter("rampart.retry.retries", "{retry}", "Retries sent by retry layers, by reason.")
	o.ends = counter("rampart.retry.ends", "{call}", "Ends of retry loops, by why they stopped.")
	o.budgetRefusals = counter("rampart.budget.refusals", "{withdrawal}", "Withdrawals refused by retry budgets.")
	o.timeouts = counter("rampart.timeout.fired", "{call}", "Calls ended by a timeout layer's deadline.")
	o.hedgesSent = counter("rampart.hedge.sent", "{request}", "Hedge copies sent.")
	o.hedgeWins = counter("rampart.hedge.wins", "{call}", "Hedged calls with a winner, by which copy won.")
	o.limitRefusals = counter("rampart.limit.refusals", "{call}", "Calls refused by a rate limit, concurrency limit or load shedder.")
	o.fallbacks = counter("rampart.fallback.uses", "{call}", "Calls answered by a fallback.")
	o.joins = counter("rampart.coalesce.joins", "{call}", "Calls that joined an identical call in flight.")
	o.retryDelay = seconds("rampart.retry.delay", "The wait before each retry.")
	o.limitWait = seconds("rampart.limit.wait", "Time calls waited for a limit.")
	o.callDuration = seconds("rampart.breaker.duration", "Duration of the calls through circuit breakers whose policy times them.")
	var err error
	o.attempts, err = m.Int64Histogram("rampart.retry.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts made by each retry loop that ended."),
		metric.WithExplicitBucketBoundaries(1, 2, 3, 4, 5, 7, 10, 20, 50, 100))
	errs = append(errs, err)
	_, err = m.Int64ObservableGauge("rampart.breaker.state", metric.WithUnit("{state}"),
		metric.WithDescription("1 for the state a circuit breaker is in, 0 for the others."),
		metric.WithInt64Callback(o.observeStates))
	errs = append(errs, err)
	_, err = m.Int64ObservableCounter("rampart.breaker.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls through circuit breakers, by outcome."),
		metric.WithInt64Callback(o.observeCalls))
	errs = append(errs, err)
	o.sets.Store(&map[setKey]*options{})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rampartotel: creating instruments: %w", err)
	}
	return o, nil
}

// Observe records e as the package documentation lists. A breaker's
// events are cheaper through the Observer that [Observer.Bind] returns,
// which circuitbreaker.New asks for.
func (o *Observer) Observe(ctx context.Context, e observe.Event) {
	o.observe(ctx, e, nil)
}

// Bind returns the Observer for the events of one layer (see
// [observe.Binder]). For a circuit breaker, it is an Observer that holds
// the breaker's record, so that a call's outcome costs one atomic add and
// no lookup; for the other layers, o itself. Safe for concurrent use.
func (o *Observer) Bind(source observe.Source, name string) observe.Observer {
	if source != observe.Breaker {
		return o
	}
	o.mu.Lock()
	c := o.calls[name]
	if c == nil {
		c = &callCounts{name: name}
		o.calls[name] = c
	}
	c.refs++
	o.mu.Unlock()
	return &boundBreaker{o: o, calls: c}
}

// boundBreaker is an Observer bound to one breaker's record.
type boundBreaker struct {
	o       *Observer
	calls   *callCounts
	removed atomic.Bool
}

func (b *boundBreaker) Observe(ctx context.Context, e observe.Event) {
	if e.Kind == observe.Removed {
		if !b.removed.Swap(true) {
			b.o.release(b.calls, true)
		}
		return
	}
	b.o.observe(ctx, e, b.calls)
}

// release drops one reference to c when ref is set, and forgets c (its
// counts, its state and the attribute sets of its name) once none is left.
func (o *Observer) release(c *callCounts, ref bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ref {
		c.refs--
	}
	if c.refs > 0 || o.calls[c.name] != c {
		return
	}
	delete(o.calls, c.name)
	o.last.CompareAndSwap(c, nil)
	old := *o.sets.Load()
	sets := make(map[setKey]*options, len(old))
	for k, v := range old {
		if k.source != observe.Breaker || k.name != c.name {
			sets[k] = v
		}
	}
	o.sets.Store(&sets)
}

// observe records e; c is the record of e's breaker when the caller holds
// it, nil to look it up.
func (o *Observer) observe(ctx context.Context, e observe.Event, c *callCounts) {
	if c == nil {
		switch e.Kind {
		case observe.Success, observe.Failure, observe.Ignored, observe.Rejected, observe.Transition:
			c = o.callsOf(e.Name)
		case observe.Removed:
			o.mu.RLock()
			c = o.calls[e.Name]
			o.mu.RUnlock()
			if c != nil {
				o.release(c, false) // forgets c unless a breaker is bound to it
			}
			return
		}
	}
	switch e.Kind {
	case observe.Success:
		c.addSuccess()
		if e.Duration > 0 {
			o.recordDuration(ctx, e)
		}
		return
	case observe.Failure:
		c.failure.Add(1)
		if e.Duration > 0 {
			o.recordDuration(ctx, e)
		}
		return
	case observe.Ignored:
		c.ignored.Add(1)
		return
	case observe.Removed:
		return
	case observe.Rejected:
		c.rejected.Add(1)
	case observe.Transition:
		o.mu.Lock()
		c.state = e.To
		o.mu.Unlock()
		o.transitions.Add(ctx, 1, o.opts(setKey{source: e.Source, name: e.Name, k1: KeyBreakerFrom, s1: e.From, k2: KeyBreakerTo, s2: e.To}).add...)
	case observe.Retrying:
		o.retries.Add(ctx, 1, o.opts(setKey{source: e.Source, name: e.Name, k1: KeyRetryReason, s1: retryReason(e.Err)}).add...)
		o.retryDelay.Record(ctx, e.Duration.Seconds(), o.opts(setKey{source: e.Source, name: e.Name}).record...)
	case observe.RetryEnd:
		opts := o.opts(setKey{source: e.Source, name: e.Name, k1: KeyRetryStop, s1: retryStop(e.Err)})
		o.ends.Add(ctx, 1, opts.add...)
		o.attempts.Record(ctx, int64(e.Attempt), opts.record...)
	case observe.BudgetRefused:
		o.budgetRefusals.Add(ctx, 1, o.opts(setKey{source: e.Source, name: e.Name}).add...)
	case observe.TimeoutFired:
		o.timeouts.Add(ctx, 1, o.opts(setKey{source: e.Source, name: e.Name}).add...)
	case observe.HedgeSent:
		o.hedgesSent.Add(ctx, 1, o.opts(setKey{source: e.Source, name: e.Name}).add...)
	case observe.HedgeWon:
		winner := "hedge"
		if e.Attempt == 1 {
			winner = "original"
		}
		o.hedgeWins.Add(ctx, 1, o.opts(setKey{source: e.Source, name: e.Name, k1: KeyHedgeWinner, s1: winner}).add...)
	case observe.Refused:
		o.limitRefusals.Add(ctx, 1, o.opts(setKey{source: e.Source, name: e.Name}).add...)
		if e.Duration > 0 {
			o.limitWait.Record(ctx, e.Duration.Seconds(), o.opts(setKey{source: e.Source, name: e.Name, limit: true}).record...)
		}
	case observe.Queued:
		o.limitWait.Record(ctx, e.Duration.Seconds(), o.opts(setKey{source: e.Source, name: e.Name, limit: true, admitted: true}).record...)
	case observe.FallbackUsed:
		o.fallbacks.Add(ctx, 1, o.opts(setKey{source: e.Source, name: e.Name}).add...)
	case observe.Joined:
		o.joins.Add(ctx, 1, o.opts(setKey{source: e.Source, name: e.Name}).add...)
	}
	if o.spans {
		addSpanEvent(ctx, e)
	}
}

// callsOf returns the record of the breaker named name, creating it on
// its first event.
func (o *Observer) callsOf(name string) *callCounts {
	if c := o.last.Load(); c != nil && c.name == name {
		return c // no store: a store on every event would cost more than the lookup saves
	}
	o.mu.RLock()
	c := o.calls[name]
	o.mu.RUnlock()
	if c == nil {
		o.mu.Lock()
		if c = o.calls[name]; c == nil {
			c = &callCounts{name: name}
			o.calls[name] = c
		}
		o.mu.Unlock()
	}
	o.last.Store(c)
	return c
}

// recordDuration records the duration of a call through a breaker.
func (o *Observer) recordDuration(ctx context.Context, e observe.Event) {
	o.callDuration.Record(ctx, e.Duration.Seconds(), o.opts(setKey{source: e.Source, name: e.Name, k1: KeyOutcome, s1: e.Kind.String()}).record...)
}

// observeCalls reports the rampart.breaker.calls counter.
func (o *Observer) observeCalls(_ context.Context, obs metric.Int64Observer) error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	for name, c := range o.calls {
		for _, oc := range []struct {
			outcome observe.Kind
			n       int64
		}{
			{observe.Success, c.successes()}, {observe.Failure, c.failure.Load()},
			{observe.Ignored, c.ignored.Load()}, {observe.Rejected, c.rejected.Load()},
		} {
			obs.Observe(oc.n, metric.WithAttributes(KeyLayer.String(observe.Breaker.String()), KeyName.String(name), KeyOutcome.String(oc.outcome.String())))
		}
	}
	return nil
}

// opts returns the prebuilt options for k's attribute set, building them
// the first time.
func (o *Observer) opts(k setKey) *options {
	if p := (*o.sets.Load())[k]; p != nil {
		return p
	}
	kvs := []attribute.KeyValue{KeyLayer.String(k.source.String()), KeyName.String(k.name)}
	if k.k1 != "" {
		kvs = append(kvs, k.k1.String(k.s1))
	}
	if k.k2 != "" {
		kvs = append(kvs, k.k2.String(k.s2))
	}
	if k.limit {
		kvs = append(kvs, KeyLimitAdmitted.Bool(k.admitted))
	}
	set := attribute.NewSet(kvs...)
	p := &options{
		add:    []metric.AddOption{metric.WithAttributeSet(set)},
		record: []metric.RecordOption{metric.WithAttributeSet(set)},
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	old := *o.sets.Load()
	if q := old[k]; q != nil {
		return q
	}
	sets := make(map[setKey]*options, len(old)+1)
	maps.Copy(sets, old)
	sets[k] = p
	o.sets.Store(&sets)
	return p
}

// observeStates reports the rampart.breaker.state gauge.
func (o *Observer) observeStates(_ context.Context, obs metric.Int64Observer) error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	for name, c := range o.calls {
		// A breaker that has reported no transition is closed: a breaker
		// reports every transition from its creation on.
		cur := c.state
		if cur == "" {
			cur = circuitbreaker.Closed.String()
		}
		for _, st := range breakerStates {
			v := int64(0)
			if st == cur {
				v = 1
			}
			obs.Observe(v, metric.WithAttributes(KeyLayer.String(observe.Breaker.String()), KeyName.String(name), KeyBreakerState.String(st)))
		}
	}
	return nil
}

// retryReason is the rampart.retry.reason of a retry of err.
func retryReason(err error) string {
	switch {
	case err == nil:
		return "response"
	case errors.Is(err, timeout.ErrTimeout):
		return "timeout"
	}
	return "error"
}

// retryStop is the rampart.retry.stop of a loop that stopped for why.
func retryStop(why error) string {
	switch {
	case why == nil:
		return "done"
	case errors.Is(why, retry.ErrMaxAttempts):
		return "max_attempts"
	case errors.Is(why, retry.ErrBudgetExhausted):
		return "budget"
	case errors.Is(why, retry.ErrDeadline):
		return "deadline"
	case errors.Is(why, retry.ErrHintForever):
		return "hint_forever"
	case errors.Is(why, circuitbreaker.ErrOpen):
		return "breaker_open"
	}
	return "canceled"
}

// addSpanEvent adds e to the span active in ctx, if it is recording.
func addSpanEvent(ctx context.Context, e observe.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	kvs := make([]attribute.KeyValue, 0, 4)
	kvs = append(kvs, KeyName.String(e.Name))
	if e.Attempt != 0 {
		kvs = append(kvs, KeyAttempt.Int(e.Attempt))
	}
	if e.Duration != 0 {
		kvs = append(kvs, KeyDuration.Float64(e.Duration.Seconds()))
	}
	if e.Err != nil {
		kvs = append(kvs, KeyError.String(e.Err.Error()))
	}
	span.AddEvent("rampart."+e.Source.String()+"."+e.Kind.String(), trace.WithAttributes(kvs...))
}
