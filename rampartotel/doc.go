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
//	name                         instrument             unit          extra attributes            recorded on
//	rampart.breaker.calls        Int64ObservableCounter {call}        rampart.outcome             each call through a breaker's layer: outcome "success", "failure", "ignored" or "rejected"
//	rampart.breaker.duration     Float64Histogram       s             rampart.outcome             each call through a breaker whose policy times calls: "success" or "failure"
//	rampart.breaker.transitions  Int64Counter           {transition}  rampart.breaker.from, .to   each transition
//	rampart.breaker.state        Int64ObservableGauge   {state}       rampart.breaker.state       1 for the state a breaker is in, 0 for the others; a breaker appears when it is created (or, through an Observer it was not created with, with its first event)
//	rampart.retry.retries        Int64Counter           {retry}       rampart.retry.reason        each retry: reason "error", "timeout" (the failure matches timeout.ErrTimeout) or "response" (a retryable response)
//	rampart.retry.delay          Float64Histogram       s             -                           each retry's wait
//	rampart.retry.ends           Int64Counter           {call}        rampart.retry.stop          each end of a retry loop: stop "done", "max_attempts", "budget", "deadline", "hint_forever", "breaker_open", "canceled" (the caller's context)
//	rampart.retry.attempts       Int64Histogram         {attempt}     rampart.retry.stop          the attempts made by each loop that ended
//	rampart.budget.refusals      Int64Counter           {withdrawal}  -                           each withdrawal a budget refused
//	rampart.timeout.fired        Int64Counter           {call}        -                           each call a timeout layer ended
//	rampart.hedge.sent           Int64Counter           {request}     -                           each hedge copy sent
//	rampart.hedge.wins           Int64Counter           {call}        rampart.hedge.winner        each hedged call with a winner: "original" or "hedge"
//	rampart.limit.refusals       Int64Counter           {call}        -                           each call refused by ratelimit, concurrency or loadshed
//	rampart.limit.wait           Float64Histogram       s             rampart.limit.admitted      each wait for a limit (bool: let through or refused after waiting)
//	rampart.fallback.uses        Int64Counter           {call}        -                           each call a fallback answered
//	rampart.coalesce.joins       Int64Counter           {call}        -                           each call that joined a shared call
//
// A breaker inside a retry layer, as the package rampart documentation
// orders them, sees each attempt: rampart.breaker.calls and
// rampart.breaker.duration then count and time attempts, not requests.
// Through the OpenTelemetry Prometheus exporter the names become
// rampart_breaker_calls_total, rampart_retry_delay_seconds,
// rampart_breaker_state and so on, and the attributes rampart_name,
// rampart_outcome…
//
// # Cardinality
//
// Each metric has one series per attribute combination: per layer name,
// times the values of its extra attributes listed above (at most five
// states, seven retry stops…). Names are the user's, so their number is
// too, with one exception the Observer takes care of: the breakers of a
// circuitbreaker.Group, named "Name/key", one per key. When a group drops
// an idle breaker it reports an observe.Removed event, and the Observer
// forgets that breaker: its rampart.breaker.calls and rampart.breaker.state
// series stop being reported and its attribute sets are released (a key
// that comes back starts again from zero, which backends read as a counter
// reset). A group holds at most GroupConfig.MaxKeys breakers (10,000 by
// default) plus its overflow breaker, so the breaker series of a group are
// bounded by 9 times that many at any time. The series of the counters and
// histograms recorded through the SDK (transitions, durations) are the
// SDK's to keep; bound them with the SDK's cardinality limit
// (sdkmetric.WithCardinalityLimit) if keys come and go by the thousand.
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
// Span events allocate, and only when the span is recording. The other
// layers report only what they did beyond letting a call through (see
// package observe).
package rampartotel
