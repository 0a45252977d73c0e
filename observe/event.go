package observe

import (
	"context"
	"fmt"
	"time"
)

// Observer is told about the events of the layers it is given to. The
// same Observer may serve any number of layers, concurrently.
//
// Observe is called synchronously, before the layer goes on, with the
// context of the call the event belongs to (a context that carries the
// call's trace span, say), on that call's goroutine except where a layer's
// Config says otherwise (a hedge copy is reported on its own goroutine,
// before it is sent). An event that belongs to no call (a breaker's transition, a
// budget's refusal) comes with [context.Background]. Observe must be safe for
// concurrent use, return quickly and not block: it delays the call. It
// must not keep ctx after it returns. A panic in Observe is not recovered
// by the layer; it reaches the caller as any panic in the call does, also
// from a hedge copy's goroutine (see hedge.NewLayer)
// (a breaker's transitions are the exception: their listeners' panics are
// recovered as described at circuitbreaker's Config.ListenerPanic).
//
// The idea is failsafe-go's event listeners and resilience4j's event
// publishers, with one method for every layer so that one Observer can
// feed a log or a metrics system.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Func adapts a function to an [Observer], as http.HandlerFunc adapts a
// function to a Handler. A nil Func observes nothing.
type Func func(ctx context.Context, e Event)

// Observe calls f(ctx, e), unless f is nil.
func (f Func) Observe(ctx context.Context, e Event) {
	if f != nil {
		f(ctx, e)
	}
}

// Join returns an Observer that hands each event to every non-nil
// observer in obs, in order, but a breaker's [Success] only to those that
// want it ([Wants]). It returns nil when none is left, so that a layer
// given the result reports nothing, and the observer itself when only one
// is left.
func Join(obs ...Observer) Observer {
	var kept, successes joined
	for _, o := range obs {
		if o != nil {
			kept = append(kept, o)
			if Wants(o, Success) {
				successes = append(successes, o)
			}
		}
	}
	switch {
	case len(kept) == 0:
		return nil
	case len(kept) == 1:
		return kept[0]
	case len(successes) == len(kept):
		return kept
	}
	s := selective{joined: kept}
	if len(successes) == 1 {
		s.successes = successes[0]
	} else if len(successes) > 1 {
		s.successes = successes
	}
	return s
}

// selective is observers joined of which only some want a breaker's
// successes, one per call: a success goes to those alone.
type selective struct {
	joined
	successes Observer // nil: none wants them
}

func (s selective) Observe(ctx context.Context, e Event) {
	if e.Kind != Success {
		s.joined.Observe(ctx, e)
	} else if s.successes != nil {
		s.successes.Observe(ctx, e)
	}
}

// Wants reports whether any part of s wants events of kind k.
func (s selective) Wants(k Kind) bool {
	if k == Success {
		return s.successes != nil
	}
	return s.joined.Wants(k)
}

type joined []Observer

func (j joined) Observe(ctx context.Context, e Event) {
	for _, o := range j {
		o.Observe(ctx, e)
	}
}

// Bind binds each part of j, so that a joined observer keeps the speed of
// its parts' bound forms.
func (j joined) Bind(source Source, name string) Observer {
	bound := make([]Observer, len(j))
	for i, o := range j {
		bound[i] = Bind(o, source, name)
	}
	return Join(bound...)
}

// Binder is an [Observer] that can prepare itself for the events of one
// layer: a layer whose constructor is given a Binder calls Bind once, with
// its Source and Name, and reports its events to the Observer Bind returns
// instead, so that the observer can resolve once what it would otherwise
// look up on every event (a metric's attribute set, the counters of a
// breaker by name). The events a layer reports to the bound Observer all
// carry the source and name it was bound with.
//
// Bind must be safe for concurrent use and may return the Binder itself,
// or nil when it wants no events from the layer (an observer whose
// metrics go nowhere), which the layer then does not report, at the cost
// of a layer without an Observer. Layers that bind: circuitbreaker (its Config), retry
// and budget; the others report to the Observer as given, which must
// therefore work unbound too.
type Binder interface {
	Observer
	Bind(source Source, name string) Observer
}

// Bind returns obs bound to the layer of source and name when obs is a
// [Binder] (nil when it wants no events), obs itself otherwise (nil
// included). Layers call it once, in their constructor.
func Bind(obs Observer, source Source, name string) Observer {
	if b, ok := obs.(Binder); ok {
		return nilIfNone(b.Bind(source, name))
	}
	return obs
}

// nilIfNone returns nil for an Observer that is nil or a nil joined list,
// so that a layer tests one nil.
func nilIfNone(obs Observer) Observer {
	if j, ok := obs.(joined); ok && len(j) == 0 || obs == nil {
		return nil
	}
	return obs
}

// MemberBinder is a [Binder] that can also bind a member of a group of
// like layers created on demand (a circuitbreaker.Group's breaker for one
// key), so that it can aggregate the members under the group's name
// rather than keep something per key. BindMember is given the group's
// Name, the member's key and the member's own Name (the name its events
// carry, "group/key"); the rules of Bind apply (nil: no events).
type MemberBinder interface {
	Binder
	BindMember(source Source, group, key, name string) Observer
}

// BindMember returns obs bound to the member key of the group named group,
// whose events carry name: through BindMember when obs is a
// [MemberBinder], else as [Bind] binds it with name.
func BindMember(obs Observer, source Source, group, key, name string) Observer {
	if b, ok := obs.(MemberBinder); ok {
		return nilIfNone(b.BindMember(source, group, key, name))
	}
	return Bind(obs, source, name)
}

// BindMember binds each part of j as a member.
func (j joined) BindMember(source Source, group, key, name string) Observer {
	bound := make([]Observer, len(j))
	for i, o := range j {
		bound[i] = BindMember(o, source, group, key, name)
	}
	return Join(bound...)
}

// Selector is an [Observer] that wants only some kinds of event. A layer
// that reports an event on every call (a circuit breaker's [Success]) asks
// its bound Observer once, in its constructor, whether it wants that kind,
// and does not report it when it does not, at the cost of a layer without
// an Observer for that event. Wants must return the same answer for a
// kind every time; a Selector must still accept, and may drop, any event.
// Layers that ask: circuitbreaker, for [Success].
type Selector interface {
	Observer
	Wants(k Kind) bool
}

// Wants reports whether obs wants events of kind k: false for nil, what
// Wants says for a [Selector], true for any other Observer. For observers
// joined by [Join], whether any of them wants it.
func Wants(obs Observer, k Kind) bool {
	if obs == nil {
		return false
	}
	if s, ok := obs.(Selector); ok {
		return s.Wants(k)
	}
	return true
}

// Wants reports whether any part of j wants events of kind k.
func (j joined) Wants(k Kind) bool {
	for _, o := range j {
		if Wants(o, k) {
			return true
		}
	}
	return false
}

// Event is one thing a layer did. Fields that do not apply to its Kind are
// zero; each [Kind] says which apply. An Event is a plain value: an
// Observer may keep it.
type Event struct {
	// Source is the kind of layer that reports the event.
	Source Source
	// Name is the Name of the layer (or of its stateful value, a breaker
	// or a budget, say) from its Config; empty when unnamed.
	Name string
	// Kind is what happened.
	Kind Kind
	// Attempt is a count whose meaning depends on Kind: the number of the
	// attempt a [Retrying] is about to make (2 for the first retry), the
	// attempts made when a [RetryEnd] stops, or the number of a hedge copy
	// ([HedgeSent], [HedgeWon]: 1 is the original call).
	Attempt int
	// Duration is a length of time whose meaning depends on Kind: a
	// retry's delay, a wait in a queue, the limit of a timeout that fired,
	// how long after the original call a hedge copy was sent.
	Duration time.Duration
	// Err is the error the event is about, depending on Kind: the outcome
	// being retried, why a retry loop stopped, the refusal returned, the
	// error a fallback replaced, the cause of a breaker's trip.
	Err error
	// From and To are a breaker's states before and after a [Transition],
	// by the names circuitbreaker.State prints ("closed", "open",
	// "half-open", "forced-open", "forced-closed").
	From, To string
	// Calls and Failures are, for a breaker's trip (a [Transition] to
	// open), the counts it was decided on: Failures among Calls (a run of
	// N consecutive failures is N and N; a window's counts; the probes
	// judged and failed for a re-open). Zero otherwise.
	Calls, Failures int
}

// Source is the kind of layer that reports an event.
type Source uint8

// The sources. Their names, from String, are the package names.
const (
	// Breaker is package circuitbreaker.
	Breaker Source = iota + 1
	// Retry is package retry.
	Retry
	// Budget is package budget.
	Budget
	// Timeout is package timeout.
	Timeout
	// Hedge is package hedge.
	Hedge
	// RateLimit is package ratelimit.
	RateLimit
	// Concurrency is package concurrency.
	Concurrency
	// LoadShed is package loadshed.
	LoadShed
	// Fallback is package fallback.
	Fallback
	// Coalesce is package coalesce.
	Coalesce
	// Shadow is package shadow.
	Shadow
)

var sourceNames = [...]string{
	Breaker:     "circuitbreaker",
	Retry:       "retry",
	Budget:      "budget",
	Timeout:     "timeout",
	Hedge:       "hedge",
	RateLimit:   "ratelimit",
	Concurrency: "concurrency",
	LoadShed:    "loadshed",
	Fallback:    "fallback",
	Coalesce:    "coalesce",
	Shadow:      "shadow",
}

// String returns the name of the source's package, such as "retry".
func (s Source) String() string {
	if int(s) < len(sourceNames) && sourceNames[s] != "" {
		return sourceNames[s]
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Kind is what a layer did.
type Kind uint8

// The kinds of event, with the layers that report them and the fields they
// set besides Source and Name.
const (
	// Transition: a breaker changed state. From, To; Err is the cause of
	// a trip (a transition to open or forced-open), nil otherwise; Calls
	// and Failures, for a trip, the counts it was decided on; Duration,
	// for a transition to open, its cool-down (math.MaxInt64, which is
	// rampart.Forever, for one that lasts until a reset; zero for none),
	// after which the breaker is half-open and lets a probe through,
	// though it reports that transition only when the next call arrives.
	// From and To both "open" is no change of state: the end of an Open
	// was moved by a fleet's shared record (circuitbreaker's ApplyRemote),
	// and Duration is the rest of it (zero: it ends now).
	Transition Kind = iota + 1
	// Retrying: a retry layer is about to retry, after waiting Duration.
	// Attempt is the number of the attempt it is about to make (2 for the
	// first retry); Err is the failure being retried, nil when a response
	// asked for the retry.
	Retrying
	// RetryEnd: a retry loop stopped after a call wanted a retry, or after
	// an attempt was refused by an open circuit breaker below. Attempt is
	// the number of attempts made; Err is why it stopped: nil when the
	// last outcome was not to be retried (a success, say), or one of
	// retry.ErrMaxAttempts, retry.ErrBudgetExhausted, retry.ErrDeadline,
	// retry.ErrHintForever, the caller's context error, or the open
	// breaker's error (matching circuitbreaker.ErrOpen).
	RetryEnd
	// BudgetRefused: a retry budget refused a withdrawal. No other field.
	BudgetRefused
	// TimeoutFired: a timeout layer's deadline ended a call. Duration is
	// the timeout.
	TimeoutFired
	// HedgeSent: a hedge layer sent a copy of a call. Attempt is the
	// copy's number (2 for the first hedge); Duration is how long after
	// the original it was sent.
	HedgeSent
	// HedgeWon: the copy numbered Attempt gave the result of a hedged call
	// for which at least one hedge was sent (1 is the original).
	HedgeWon
	// Refused: a limit (ratelimit, concurrency, loadshed) refused a call.
	// Err is the refusal returned to the caller; Duration is how long the
	// call waited before it (zero when refused at once).
	Refused
	// Queued: a call waited Duration for a limit (ratelimit, concurrency)
	// before it was let through.
	Queued
	// FallbackUsed: a fallback layer answered instead of the inner
	// service. Err is the error it replaced.
	FallbackUsed
	// Joined: a coalesce layer joined a call to an identical call in
	// flight instead of making its own. No other field.
	Joined
	// Success: a call through a circuit breaker's layer succeeded.
	// Duration is the call's duration when the breaker's policy times
	// calls, zero otherwise.
	Success
	// Failure: a call through a circuit breaker's layer failed, as its
	// policy counts failures. Err is the failure; Duration as for Success.
	Failure
	// Ignored: a call through a circuit breaker's layer counted neither
	// as a success nor as a failure (the caller gave up, or a classifier
	// said so). Err is the call's error, if any.
	Ignored
	// Rejected: a circuit breaker refused a call without making it. Err
	// is the rejection (matching circuitbreaker.ErrOpen).
	Rejected
	// Removed: a circuit breaker group dropped the breaker of Name (idle,
	// or to make room for a new key), reported with
	// [context.Background] after the drop. An observer that keeps
	// something per name may forget it; a later call for the same key
	// creates a new breaker, which starts afresh. No other field.
	Removed
	// Lost: a shadow breaker (package shadow, Source Shadow, Name the
	// candidate's) would have refused a call that succeeded: goodput the
	// candidate would have cost. Err is its refusal (matching
	// circuitbreaker.ErrOpen). The candidate's breaker reports its own
	// Rejected, Transition and outcome events under Source Breaker.
	Lost
	// Tuned: a layer's settings were changed while it ran
	// (circuitbreaker.Breaker.Tune, budget.Budget.Tune, retry.Tuner.Tune,
	// concurrency.Limiter.SetMax, ratelimit.Tune). For a breaker, Calls
	// and Failures are the counts its policy kept through the change
	// (zero outside Closed, or when its window was emptied); for a retry
	// layer, Attempt is the new MaxAttempts; no other field.
	Tuned
)

var kindNames = [...]string{
	Transition:    "transition",
	Retrying:      "retrying",
	RetryEnd:      "retry-end",
	BudgetRefused: "budget-refused",
	TimeoutFired:  "timeout-fired",
	HedgeSent:     "hedge-sent",
	HedgeWon:      "hedge-won",
	Refused:       "refused",
	Queued:        "queued",
	FallbackUsed:  "fallback-used",
	Joined:        "joined",
	Success:       "success",
	Failure:       "failure",
	Ignored:       "ignored",
	Rejected:      "rejected",
	Removed:       "removed",
	Lost:          "lost",
	Tuned:         "tuned",
}

// String returns the kind's name, such as "retry-end".
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}
