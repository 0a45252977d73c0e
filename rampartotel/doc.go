// Package rampartotel turns the events of rampart's layers (package
// observe) into OpenTelemetry metrics and span events.
//
// # Quick start
//
//	obs, err := rampartotel.New(rampartotel.Config{MeterProvider: mp})
//	...
//	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: obs})
//	retried, err := retry.NewLayer[Req, Resp](retry.Config[Req, Resp]{Name: "db", Observer: obs})
//
// One Observer serves every layer of a program; give each layer a Name,
// which becomes the rampart.name attribute. Combine it with a log with
// observe.Join.
//
// # Metrics
//
// OpenTelemetry has no semantic conventions for circuit breakers or
// retries, so the names are rampart's own, under "rampart." (as Polly's
// are under "resilience.polly."). Every metric has the attributes
// rampart.layer (the package: "circuitbreaker", "retry", …) and
// rampart.name (the layer's Name, "" when unnamed); durations are in
// seconds, in buckets from 5ms to 10s (those of the semantic conventions'
// http.server.request.duration).
//
//	name                         instrument                   unit          extra attributes           recorded on
//	rampart.breaker.calls        Int64ObservableCounter       {call}        rampart.outcome            each call through a breaker's layer: outcome "success", "failure", "ignored" or "rejected"
//	rampart.breaker.duration     Float64Histogram             s             rampart.outcome            each call through a breaker whose policy times calls: "success" or "failure"
//	rampart.breaker.transitions  Int64ObservableCounter       {transition}  rampart.breaker.from, .to  each transition; the four a breaker makes by itself at zero from its creation, forced ones once they happen
//	rampart.breaker.state        Int64ObservableUpDownCounter {breaker}     rampart.breaker.state      how many breakers of the name are in each state (1 for a lone breaker's state, 0 for the others), summed over the Observers of one MeterProvider (a gauge in Prometheus); from a breaker's creation (or, through an Observer it was not created with, its first event)
//	rampart.breaker.state.time   Float64ObservableCounter     s             rampart.breaker.state      seconds the name's breakers have spent in each state, by the Observer's clock when told of each transition
//	rampart.retry.retries        Int64Counter                 {retry}       rampart.retry.reason       each retry: reason "error", "timeout" (the failure matches timeout.ErrTimeout) or "response" (a retryable response)
//	rampart.retry.delay          Float64Histogram             s             -                          each retry's wait
//	rampart.retry.ends           Int64Counter                 {call}        rampart.retry.stop         each end of a retry loop: stop "done", "max_attempts", "budget", "deadline", "hint_forever", "breaker_open", "upstream_retry" (the request is a retry at the hop that sent it), "canceled" (the caller's context), "committed" (a gRPC stream's response reached the caller)
//	rampart.retry.attempts       Int64Histogram               {attempt}     rampart.retry.stop         the attempts made by each loop that ended
//	rampart.budget.refusals      Int64Counter                 {withdrawal}  -                          each withdrawal a budget refused; at zero from the budget's creation (budget.Config.Observer), so rate and increase see its first refusals
//	rampart.timeout.fired        Int64Counter                 {call}        -                          each call a timeout layer ended (ramparthttp's AttemptTimeout: also a response body it ended mid-read, once, as the breaker counts it)
//	rampart.hedge.sent           Int64Counter                 {request}     -                          each hedge copy sent
//	rampart.hedge.wins           Int64Counter                 {call}        rampart.hedge.winner       each hedged call with a winner: "original" or "hedge"
//	rampart.limit.refusals       Int64Counter                 {call}        -                          each call refused by ratelimit, concurrency or loadshed
//	rampart.limit.wait           Float64Histogram             s             rampart.limit.admitted     each wait for a limit (bool: let through or refused after waiting)
//	rampart.fallback.uses        Int64Counter                 {call}        -                          each call a fallback answered
//	rampart.coalesce.joins       Int64Counter                 {call}        -                          each call that joined a shared call
//
// A breaker inside a retry layer, as the package rampart documentation
// orders them, sees each attempt: rampart.breaker.calls and
// rampart.breaker.duration then count and time attempts, not requests.
//
// The breaker metrics say what circuitbreaker.Breaker.State says. An
// open breaker whose cool-down has ended is half-open (it lets the next
// call through as a probe) though it makes that transition only when the
// call arrives: rampart.breaker.state counts it half-open from the end of
// its cool-down (as the Observer's clock measures it from the trip), not
// open until traffic comes, and rampart.breaker.transitions and
// rampart.breaker.state.time count the transition as of that end, once.
// A cool-down that lasts until a reset (rampart.Forever) stays open, and
// so does one the transition does not give (zero: CoolDown Immediate, whose
// next call probes at once, or an event not reported by a breaker) until
// the next transition. An Open whose end a fleet's shared record moved
// (package rampartredis: a replica that lost the claim of the half-open
// round stays open while another probes) is counted open until its new
// end, with no transition counted.
// Through the OpenTelemetry Prometheus exporter the names become
// rampart_breaker_calls_total, rampart_retry_delay_seconds,
// rampart_breaker_state and so on, and the attributes rampart_name,
// rampart_outcome…
//
// # Lifecycle and cardinality
//
// The breaker metrics (calls, state, state.time, transitions) are read
// from one record per name, which exists from the moment a breaker is
// created with the Observer (circuitbreaker.New binds it) and goes when
// no breaker of its name is left. Breakers that share a Name share the
// record: their calls add up and the state gauge counts them by state. A
// breaker leaves its record when it is removed: a circuitbreaker.Group
// reports each breaker it drops, and a breaker collected without a group
// (one replaced under its name) is reported by the breaker's cleanup; its
// calls stay in the record's totals. A record with no breaker left is
// forgotten: its series stop being reported and its attribute sets are
// released. rampart.breaker.duration, a histogram recorded through the
// SDK, is recorded under the record's name.
//
// A Group's breakers, one per key, are aggregated by default under the
// Group's Name: one set of series for the group (calls by outcome, the
// number of its breakers in each state) whatever its keys, kept as long
// as the group lives (its overflow breaker holds the record), so its
// totals are exact and never reset. Config.KeySeries opts into series of
// their own, with the attribute rampart.key, for at most that many keys
// at once over the Observer; the breakers created past the bound are
// aggregated under the Group's Name, and a dropped key's series make room
// for another. Every call is counted once, in one series, either way. So
// with the default, series number as the layer names a program has,
// times the few values of each metric's extra attributes. Close stops
// everything.
//
// # Traces
//
// Each event that belongs to a call, except a breaker's successes, failures
// and ignored calls (one per call), is added to the span active in the
// call's context, if it is recording, as a span event named
// "rampart.<layer>.<kind>" ("rampart.retry.retrying",
// "rampart.concurrency.refused") with the attributes rampart.name,
// rampart.attempt, rampart.duration (seconds) and rampart.error where the
// event sets them. Events without a call (a breaker's transition, a
// budget's refusal) come with context.Background and reach no span.
//
// # Cost
//
// Attribute sets are built once for each combination and kept, so
// recording an event allocates nothing in the Observer itself. A breaker
// binds the Observer when it is created (observe.Binder): the Observer it
// then reports to holds that breaker's record, so a call's outcome is one
// atomic add with no lookup by name; the
// OpenTelemetry SDK's own cost comes on top. A breaker's call outcomes,
// one per call, are counted with an atomic add per call and read by the
// counter's callback at collection, without a measurement through the SDK
// (unless the policy times calls: then the duration is recorded too).
// Span events allocate, and only when the span is recording. With a
// MeterProvider whose meter is the no-op one, recognised once at New, a
// breaker's successful call costs what it costs without an Observer: the
// breaker is not told of it (observe.Selector), and with
// Config.NoSpanEvents no bound layer reports anything. The figures, in
// instructions per call, are in the repository's bench/README.md
// ("Observability cost"). The other layers report only what they did
// beyond letting a call through (see package observe).
package rampartotel
