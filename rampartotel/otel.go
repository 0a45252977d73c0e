package rampartotel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
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
	KeyKey           = attribute.Key("rampart.key")
	KeyRetryReason   = attribute.Key("rampart.retry.reason")
	KeyRetryStop     = attribute.Key("rampart.retry.stop")
	KeyHedgeWinner   = attribute.Key("rampart.hedge.winner")
	KeyLimitAdmitted = attribute.Key("rampart.limit.admitted")
	// Span event attributes.
	KeyAttempt  = attribute.Key("rampart.attempt")
	KeyDuration = attribute.Key("rampart.duration")
	KeyError    = attribute.Key("rampart.error")
)

// secondsBuckets are the bucket boundaries of the histograms in seconds:
// those OpenTelemetry's semantic conventions give http.server.request.duration,
// from 5ms to 10s.
var secondsBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Config configures an [Observer].
type Config struct {
	// MeterProvider provides the meter of the metrics. Nil means the
	// global provider (otel.GetMeterProvider()), which records once a
	// provider is set with otel.SetMeterProvider, even later. With a
	// provider whose meter is the no-op one (that of
	// go.opentelemetry.io/otel/metric/noop's MeterProvider), the layers
	// bound to the Observer (breakers, retry, budget) report nothing but
	// what becomes span events, and pay nothing else: a breaker's
	// successful call costs what it costs without an Observer, and with
	// NoSpanEvents every bound layer does.
	MeterProvider metric.MeterProvider

	// NoSpanEvents, when true, adds no events to spans. False (the
	// default) adds each event of a call to the span active in the call's
	// context, when it is recording.
	NoSpanEvents bool

	// KeySeries is how many breakers of circuitbreaker.Groups, at most,
	// have series of their own (with the attribute rampart.key) at once,
	// over all the groups the Observer serves. Zero (the default) means
	// none: a Group's breakers are aggregated under the Group's Name. With
	// KeySeries > 0, the first keys to come get series of their own, and
	// the breakers created once KeySeries keys hold series are aggregated
	// under the Group's Name; a key's series go when its breaker is
	// dropped, which makes room for another. Either way every call is
	// counted once, in one series. Negative is an error.
	//
	// Each key with series of its own adds five points to
	// rampart.breaker.state and to rampart.breaker.state.time, four to
	// rampart.breaker.calls and four or more to
	// rampart.breaker.transitions. Keep 5 × KeySeries within the SDK's
	// cardinality limit (2,000 points a metric by default; see
	// sdkmetric.WithCardinalityLimit): past it the SDK folds the rest into
	// one overflow point, where every sum stays exact (the state too: it
	// is a count of breakers, summed) but the points of the keys folded
	// into it can no longer be told apart.
	KeySeries int
}

// Observer is an [observe.Observer] that records metrics and span events
// from the events of rampart's layers, as the package documentation lists.
// Create one with [New]; one Observer serves every layer. A nil or zero
// Observer (not made by New) records nothing. Safe for concurrent use. It
// keeps a record per breaker name and the attribute
// sets of each combination it has seen, and forgets a breaker's when a
// circuitbreaker.Group drops it (see the package documentation,
// "Cardinality").
type Observer struct {
	made      bool // by New: a nil or zero Observer records nothing
	spans     bool
	none      bool // the MeterProvider is the no-op one: nothing to record
	keySeries int
	start     time.Time // the origin of now
	reg       metric.Registration
	closed    atomic.Bool

	retries, ends, budgetRefusals, timeouts                metric.Int64Counter
	hedgesSent, hedgeWins, limitRefusals, fallbacks, joins metric.Int64Counter
	attempts                                               metric.Int64Histogram
	retryDelay, limitWait                                  metric.Float64Histogram

	callDuration metric.Float64Histogram

	calls, transitions metric.Int64Observable
	state              metric.Int64Observable
	stateTime          metric.Float64Observable

	// last is the breaker an unbound event last looked up: consecutive
	// events of one breaker through the unbound Observer find it without
	// a map lookup. A bound breaker's events never look.
	last atomic.Pointer[boundBreaker]

	mu sync.RWMutex
	// records holds the record of each breaker name, and of each key of
	// a group with series of its own (keyed of them), that a breaker is
	// bound to. implicit holds the binding of each breaker name that
	// reported events to the unbound Observer. Guarded by mu; the counts
	// themselves are atomic.
	records  map[recordKey]*record
	implicit map[string]*boundBreaker
	keyed    int
	// peak is the most records held since records was last made: a Go
	// map keeps its room after deletes, so forget makes a new one once
	// it holds a quarter of that.
	peak int
	// sets holds the measurement options of each attribute combination
	// seen, so that an event builds no attribute set. The map is never
	// changed once stored: a new combination stores a copy, with mu held,
	// so that a lookup is one atomic load and takes no lock.
	sets atomic.Pointer[map[setKey]*options]
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
	if cfg.KeySeries < 0 {
		return nil, fmt.Errorf("rampartotel: Config.KeySeries must be >= 0 (0 means a Group's breakers are aggregated under its Name), got %d", cfg.KeySeries)
	}
	m := mp.Meter(ScopeName)
	// The no-op meter (that of noop.MeterProvider, or of any provider
	// that hands it out) records nothing, now or later: recognised once
	// here, so that the layers bound to o pay nothing for metrics. The
	// global provider's meter is not it: it records once a provider is
	// set.
	_, none := m.(noop.Meter)
	o := &Observer{
		made: true, spans: !cfg.NoSpanEvents, none: none, keySeries: cfg.KeySeries, start: time.Now(),
		records: make(map[recordKey]*record), implicit: make(map[string]*boundBreaker),
	}
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
	// A count of breakers, summed (an up-down counter, a gauge in
	// Prometheus): what two Observers on one provider observe of one
	// name adds up, as the SDK's overflow point does, where a gauge would
	// keep one of the values.
	o.state, err = m.Int64ObservableUpDownCounter("rampart.breaker.state", metric.WithUnit("{breaker}"),
		metric.WithDescription("Circuit breakers in each state: 1 for the state a lone breaker is in, 0 for the others."))
	errs = append(errs, err)
	o.calls, err = m.Int64ObservableCounter("rampart.breaker.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls through circuit breakers, by outcome."))
	errs = append(errs, err)
	o.transitions, err = m.Int64ObservableCounter("rampart.breaker.transitions", metric.WithUnit("{transition}"),
		metric.WithDescription("Transitions of circuit breakers between states."))
	errs = append(errs, err)
	o.stateTime, err = m.Float64ObservableCounter("rampart.breaker.state.time", metric.WithUnit("s"),
		metric.WithDescription("Time circuit breakers have spent in each state."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rampartotel: creating instruments: %w", err)
	}
	o.reg, err = m.RegisterCallback(o.observeBreakers, o.calls, o.transitions, o.state, o.stateTime)
	errs = append(errs, err)
	o.sets.Store(&map[setKey]*options{})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rampartotel: creating instruments: %w", err)
	}
	return o, nil
}

// errNotMade is the error of Close of an Observer that New did not make.
var errNotMade = errors.New("rampartotel: the Observer was not made by New")

// Observe records e as the package documentation lists. A breaker's
// events are cheaper through the Observer that [Observer.Bind] returns,
// which circuitbreaker.New asks for.
func (o *Observer) Observe(ctx context.Context, e observe.Event) {
	if o == nil || !o.made || o.closed.Load() {
		return
	}
	switch e.Kind { // the kinds of a breaker's events, whatever the Source
	case observe.Success, observe.Failure, observe.Ignored, observe.Rejected, observe.Transition:
		o.implicitFor(e.Name).Observe(ctx, e)
	case observe.Removed:
		o.mu.Lock()
		b := o.implicit[e.Name]
		delete(o.implicit, e.Name)
		o.mu.Unlock()
		if b != nil {
			b.Observe(ctx, e)
		}
	default:
		o.observe(ctx, e)
	}
}

// implicitFor returns the binding of the breaker named name for the
// events it reports to the unbound Observer, binding it on its first.
func (o *Observer) implicitFor(name string) *boundBreaker {
	if b := o.last.Load(); b != nil && b.rec.id.name == name && !b.removed.Load() {
		return b // no store: a store on every event would cost more than the lookup saves
	}
	o.mu.RLock()
	b := o.implicit[name]
	o.mu.RUnlock()
	if b == nil {
		o.mu.Lock()
		if b = o.implicit[name]; b == nil {
			b = o.bindLocked(recordKey{name: name})
			o.implicit[name] = b
		}
		o.mu.Unlock()
	}
	o.last.Store(b)
	return b
}

// Close stops the Observer: its metrics are no longer reported, it
// forgets every breaker, and the events it is given from then on are
// dropped. It returns the error of unregistering its callback. Safe for
// concurrent use; a second Close does nothing. Close of a nil or zero
// Observer (not made by [New]) is an error and does nothing else.
func (o *Observer) Close() error {
	if o == nil || !o.made {
		return errNotMade
	}
	if o.closed.Swap(true) {
		return nil
	}
	err := o.reg.Unregister()
	o.mu.Lock()
	clear(o.records)
	clear(o.implicit)
	o.keyed = 0
	o.mu.Unlock()
	o.last.Store(nil)
	o.sets.Store(&map[setKey]*options{})
	return err
}

// observe records e, an event of a layer other than a breaker's call or
// transition (those are its boundBreaker's).
func (o *Observer) observe(ctx context.Context, e observe.Event) {
	switch e.Kind {
	case observe.Success, observe.Failure, observe.Ignored, observe.Rejected, observe.Removed, observe.Transition:
		return
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
		addSpanEvent(ctx, &e)
	}
}

// recordDuration records the duration of a call through a breaker, under
// its record's name.
func (o *Observer) recordDuration(ctx context.Context, e *observe.Event, r *record) {
	o.callDuration.Record(ctx, e.Duration.Seconds(), o.opts(setKey{source: e.Source, name: r.id.name, k1: KeyOutcome, s1: e.Kind.String()}).record...)
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
	case errors.Is(why, retry.ErrUpstreamRetry):
		return "upstream_retry"
	}
	var named interface{ RetryStop() string }
	if errors.As(why, &named) {
		return named.RetryStop() // rampartgrpc.ErrCommitted: "committed"
	}
	return "canceled"
}

// addSpanEvent adds e to the span active in ctx, if it is recording.
func addSpanEvent(ctx context.Context, e *observe.Event) {
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
