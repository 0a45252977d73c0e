// Package observe lets a program see what rampart's layers do: every layer
// reports what it did (a breaker's transition, a retry and why, a refusal
// by a limiter, a timeout that fired, a fallback used) as an [Event] to an
// [Observer] given in its Config, together with its Name.
//
// # Quick start
//
// Log every layer's events with log/slog:
//
//	obs, err := observe.NewLog(observe.LogConfig{Logger: slog.Default()})
//	...
//	retried, err := retry.NewLayer[Req, Resp](retry.Config[Req, Resp]{Name: "payments", Observer: obs})
//
// The same Observer may serve every layer of a program: the Event says
// which layer (its [Source] and Name) it comes from. [Join] sends the
// events to several observers (a log and metrics, say); the nested module
// github.com/rampart-go/rampart/rampartotel turns them into OpenTelemetry metrics
// and span events.
//
// # Cost
//
// A layer whose Observer is nil reports nothing and pays one nil check at
// the places where it would report: no allocation, no atomic write. A layer
// reports only what it did beyond passing a call through (a retry, a
// refusal, a wait), except a circuit breaker, which reports every call's
// outcome: with an Observer, that is one interface call per call. An
// Event is a value passed to one interface method call; building it
// allocates nothing. An Observer that keeps something per layer (metrics
// by name) can implement [Binder] to resolve it once, when the layer is
// built, rather than on each event; one that has no use for a breaker's
// successes (a log, metrics that go nowhere) can say so with [Selector],
// and the breaker then does not report them.
//
// # Where events come from
//
// Every layer that has a Config takes its Name and Observer there: a
// stateful value's Config (circuitbreaker, budget, the keyed rate limiter,
// loadshed's throttle) for the events of the value and of every layer over
// it, and otherwise the layer's Config (retry, timeout, hedge, fallback).
// (concurrency, ratelimit, loadshed and coalesce as well: each layer's
// Config holds its Name and Observer).
package observe
