package hedge

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/observe"
)

// Defaults that fill the zero fields of a [Config].
const (
	// DefaultDelay is the hedge delay when Config.Delay is zero.
	DefaultDelay = 50 * time.Millisecond
	// DefaultMaxAttempts is Config.MaxAttempts when it is zero: the
	// original request and one hedge.
	DefaultMaxAttempts = 2
	// DefaultWindow is Config.Window when it is zero and a Quantile is
	// set: how many recent latencies the quantile is taken over.
	DefaultWindow = 256
	// DefaultMinSamples is Config.MinSamples when it is zero and a
	// Quantile is set, or Window when Window is smaller.
	DefaultMinSamples = 32
)

// Limits on a [Config]; a larger value is an error, not clamped.
const (
	// MaxAttemptsLimit is the largest MaxAttempts accepted (the same rule
	// as retry.MaxAttemptsLimit): every attempt of a call may be in flight
	// at once, so sixteen copies of one request is already far more load
	// than hedging should add.
	MaxAttemptsLimit = 16
	// MaxWindow is the largest Window accepted.
	MaxWindow = 1 << 16
)

// Budget bounds how many hedges are sent, as a fraction of traffic. It is
// the part of a retry budget the hedge layer uses; *budget.Budget (package
// budget, after Finagle's RetryBudget) satisfies it, and one budget may be
// shared by several layers and goroutines.
//
// Deposit is called once for every hedgeable request. Withdraw is called
// before each hedge and reports whether the hedge may be sent; a false
// stops hedging for that call. Both must be safe for concurrent use and
// must not block.
//
// A budget shared with a retry layer receives a deposit from each layer
// for every request that passes through both, so retries and hedges
// together may spend up to twice its ratio; give the hedge layer a budget
// of its own to bound hedges separately.
//
// The budget pays only for hedges that were sent. The layer withdraws only
// for a hedge it sends at once; if a layer below refuses that hedge (it
// fails with an error matching [rampart.ErrRefused]: a limit with no room,
// or a circuit breaker, as when a HalfOpen breaker's only probe slot is
// taken by the original request),
// the hedge never reached the dependency, and a Budget that also has a
// method Refund() (as *budget.Budget and retry.Refunder budgets do) gets
// the withdrawal back through it; one without keeps it. Refund must be
// safe for concurrent use and must not block.
type Budget interface {
	Deposit()
	Withdraw() bool
}

// refunder is a [Budget] that takes back a withdrawal for a hedge that was
// not sent.
type refunder interface {
	Refund()
}

// Config configures a hedge layer. Every zero field is a documented default,
// except Hedgeable and Budget, which are required. A Config is passed by
// value and not retained beyond what [NewLayer] copies.
type Config[Req, Resp any] struct {
	// Hedgeable reports whether a request may be hedged, that is, sent
	// more than once: only requests that are safe to repeat (reads,
	// idempotent writes) should be. A request for which it returns false
	// goes to the inner service once, unchanged, and neither deposits into
	// nor withdraws from the Budget. Required: there is no safe default,
	// so a nil Hedgeable is an error. To hedge every request, pass a
	// function that returns true. It is called at most once per Call (not
	// at all when MaxAttempts is 1), on the caller's goroutine, and must be
	// safe for concurrent use.
	Hedgeable func(req Req) bool

	// Budget bounds the hedges: every hedgeable request deposits, every
	// hedge withdraws, and a refused withdrawal stops hedging that call
	// without cancelling any attempt already sent. Required; a nil Budget,
	// or a nil pointer of a type that implements Budget (a nil
	// *budget.Budget), is an error. To hedge without a bound (up to
	// MaxAttempts times the load when the dependency is slow), pass
	// budget.Always.
	Budget Budget

	// MaxAttempts is how many attempts a call may send in total, counting
	// the original request: 2 means at most one hedge. Zero means
	// [DefaultMaxAttempts]; otherwise it must be between 1 and
	// [MaxAttemptsLimit]. 1 disables hedging: the layer then passes every
	// call through without touching the Budget.
	MaxAttempts int

	// Delay is how long the layer waits after starting an attempt before
	// it starts the next one, while no attempt has succeeded. With a
	// Quantile it is the fallback used until MinSamples latencies have
	// been recorded. The delay is read once, when a call starts, and used
	// for every hedge of that call. Zero means DefaultDelay; a negative
	// Delay is an error.
	Delay time.Duration

	// Quantile, when not zero, makes the delay this quantile of recent
	// attempt latencies instead of Delay: 0.95 waits for the 95th
	// percentile. It is a fraction in (0, 1], not a number of percent.
	// Zero means a fixed Delay.
	//
	// The quantile uses the nearest-rank method over the last Window
	// latencies; it is computed once MinSamples latencies have been
	// recorded and then again after every Window/16 (at least 1) further
	// recordings, so recording stays cheap. Latencies are measured on the
	// monotonic clock from the start of each attempt. An accepted outcome
	// records its latency, whether or not it won. A loser that the layer
	// cancels after it ran at least the call's delay records a lower
	// bound: it ranks above every complete latency in the window (by the
	// time it ran, among such losers), and if the percentile falls on it,
	// the delay is the time it ran. This is how right-censored samples are
	// ranked when the quantile lies below the censoring times, as in the
	// Kaplan-Meier estimator: without it, hedging would cut the slow tail
	// out of the window and the delay would drift down (with lognormal
	// latencies, a learned p95 would hedge 12% of requests instead of 5%). A
	// loser cancelled before the delay, a failed attempt, and attempts
	// ended by the caller's context record nothing.
	Quantile float64

	// Window is how many recent latencies the quantile is taken over.
	// Only meaningful with a Quantile; setting it without one is an
	// error. Zero means DefaultWindow; it must not exceed MaxWindow.
	Window int

	// MinSamples is how many latencies must be recorded before the learned
	// quantile replaces Delay. Only meaningful with a Quantile; setting
	// it without one is an error. Zero means DefaultMinSamples, or Window
	// if that is smaller; it must be between 1 and Window.
	MinSamples int

	// Accept reports whether an attempt's outcome is an answer: the first
	// accepted outcome wins the call, is returned to the caller as it is
	// (an accepted error included), and cancels the other attempts. An
	// outcome it rejects is a failed attempt: it does not win, does not
	// trigger a hedge, and when every attempt sent has failed the call
	// ends (see [NewLayer] for what it then returns). Nil means an outcome
	// is accepted when its error is nil. An HTTP client rejects a 503 so
	// that a fast 503 from one replica does not beat a slower 200 from
	// another. Accept is called once for every attempt of a hedged call
	// (not for calls passed through), on that attempt's goroutine when it
	// returns, possibly after the call was decided; it must be safe for
	// concurrent use and must not block.
	Accept func(resp Resp, err error) bool

	// Hint, if not nil, extracts a server's retry-after hint from an
	// attempt's outcome, as retry.Config.Hint does; ok reports whether
	// there is one. A failed attempt (one Accept rejects) whose hint is
	// [rampart.Forever], the server's "do not retry", ends the hedging of
	// its call, as an error carrying such a [rampart.Hint] does (see
	// [NewLayer]); a finite hint changes nothing. The HTTP adapter reads
	// rampart's Rampart-Retry: no header here. Nil means only the errors'
	// hints count. It is called on the attempt's goroutine for every
	// failed attempt of a hedged call, and must be safe for concurrent use.
	Hint func(resp Resp, err error) (delay time.Duration, ok bool)
	// Discard, if not nil, receives every response that the layer does not
	// return to the caller: the responses of attempts that returned after
	// another attempt won; a rejected response (one Accept rejected with a
	// nil error) unless it is the one returned because no attempt was
	// accepted; and, when several attempts ran, the response that came
	// with each attempt's error (often the zero Resp; Discard must accept
	// it). An HTTP adapter uses it to close the bodies of losing
	// responses. It is called on the goroutine of one of the call's
	// attempts, possibly concurrently with other calls, and always before
	// Call returns. Nil means losing responses are dropped.
	Discard func(resp Resp)

	// Detach, if not nil, hands the winning attempt's context over to its
	// response instead of cancelling it when Call returns: the layer
	// passes the winner's cancel func to Detach and returns the response
	// Detach returns. Detach must make sure cancel is eventually called
	// (cancel is idempotent and safe from any goroutine); until then the
	// context stays alive. This is for responses still being read after
	// Call returns: an HTTP response body reads through its request's
	// context, so ramparthttp wraps the body to call cancel at Body.Close,
	// as it does for timeout.Config.Detach. The losers' contexts are
	// cancelled either way. Without Detach, every attempt's context is
	// cancelled before Call returns. Detach is called on the caller's
	// goroutine, once per call that returns a response with a nil error
	// (the accepted one, or a rejected one when no attempt was accepted),
	// and never for calls that return an error or that the layer passes
	// through (not hedgeable, or MaxAttempts 1), which get no context from
	// it; it must be safe for concurrent use.
	Detach func(resp Resp, cancel context.CancelFunc) Resp

	// Name names the layer in its events. Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each copy the layer sends (an
	// [observe.HedgeSent] event, on the copy's own goroutine before the
	// copy is sent, with the caller's context) and, for each call that sent at
	// least one, which copy won (an [observe.HedgeWon] event, on the
	// caller's goroutine; none when every copy failed). A call answered
	// before the delay reports nothing. See package observe.
	Observer observe.Observer
}

// settings is a validated Config with its defaults filled in.
type settings[Req, Resp any] struct {
	hedgeable   func(Req) bool
	budget      Budget
	refunder    refunder               // budget, if it takes refunds; else nil
	accept      func(Resp, error) bool // nil: err == nil
	hint        func(Resp, error) (time.Duration, bool)
	discard     func(Resp)
	detach      func(Resp, context.CancelFunc) Resp
	maxAttempts int
	delay       time.Duration
	quantile    float64
	window      int
	minSamples  int
	name        string
	obs         observe.Observer
}

// validate fills defaults and returns an error naming the first bad field.
func (c Config[Req, Resp]) validate() (settings[Req, Resp], error) {
	s := settings[Req, Resp]{
		hedgeable:   c.Hedgeable,
		budget:      c.Budget,
		accept:      c.Accept,
		hint:        c.Hint,
		discard:     c.Discard,
		detach:      c.Detach,
		maxAttempts: c.MaxAttempts,
		delay:       c.Delay,
		quantile:    c.Quantile,
		window:      c.Window,
		minSamples:  c.MinSamples,
		name:        c.Name,
		obs:         c.Observer,
	}
	switch {
	case c.Hedgeable == nil:
		return s, fmt.Errorf("hedge: Hedgeable must not be nil (hedge only requests that are safe to repeat; return true to hedge all)")
	case c.Budget == nil:
		return s, fmt.Errorf("hedge: Budget must not be nil (every hedge must be bounded; a Budget whose Withdraw returns true removes the bound)")
	case nilvalue.Is(c.Budget):
		return s, fmt.Errorf("hedge: Budget must not be a nil pointer, got %T(nil)", c.Budget)
	case c.MaxAttempts < 0 || c.MaxAttempts > MaxAttemptsLimit:
		return s, fmt.Errorf("hedge: MaxAttempts must be 0 (the default, %d) or between 1 and %d, got %d", DefaultMaxAttempts, MaxAttemptsLimit, c.MaxAttempts)
	case c.Delay < 0:
		return s, fmt.Errorf("hedge: Delay must be 0 (the default, %v) or positive, got %v", DefaultDelay, c.Delay)
	case math.IsNaN(c.Quantile) || c.Quantile < 0 || c.Quantile > 1:
		return s, fmt.Errorf("hedge: Quantile must be 0 (a fixed Delay) or a fraction in (0, 1] (0.95 for p95), got %v", c.Quantile)
	case c.Quantile == 0 && c.Window != 0:
		return s, fmt.Errorf("hedge: Window is only meaningful with a Quantile, got %d with Quantile 0", c.Window)
	case c.Quantile == 0 && c.MinSamples != 0:
		return s, fmt.Errorf("hedge: MinSamples is only meaningful with a Quantile, got %d with Quantile 0", c.MinSamples)
	case c.Window < 0 || c.Window > MaxWindow:
		return s, fmt.Errorf("hedge: Window must be 0 (the default, %d) or between 1 and %d, got %d", DefaultWindow, MaxWindow, c.Window)
	}
	s.refunder, _ = s.budget.(refunder)
	if s.maxAttempts == 0 {
		s.maxAttempts = DefaultMaxAttempts
	}
	if s.delay == 0 {
		s.delay = DefaultDelay
	}
	if s.quantile == 0 {
		return s, nil
	}
	if s.window == 0 {
		s.window = DefaultWindow
	}
	if c.MinSamples < 0 || c.MinSamples > s.window {
		return s, fmt.Errorf("hedge: MinSamples must be 0 (the default, %d or Window if smaller) or between 1 and Window (%d), got %d", DefaultMinSamples, s.window, c.MinSamples)
	}
	if s.minSamples == 0 {
		s.minSamples = min(DefaultMinSamples, s.window)
	}
	return s, nil
}
