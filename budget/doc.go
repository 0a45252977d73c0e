// Package budget provides retry budgets: a shared allowance that bounds
// retries to a share of recent traffic plus a small floor per second, after
// Finagle's RetryBudget and Tower's TpsBudget.
//
// # Quick start
//
//	rb := new(budget.Budget) // the defaults; budget.New(budget.Config{...}) for others
//	l, err := retry.NewLayer(retry.Config[Req, Resp]{Budget: rb})
//
// Share one [*Budget] among all callers of a dependency: the retry layer
// (package [github.com/rampart-go/rampart/retry]) deposits once per request
// and withdraws before each retry, and a hedge layer does the same for its
// hedges. A Budget is also usable on its own: call [Budget.Deposit] for each
// request and retry only if [Budget.Withdraw] returns true. Where the retry
// layer goes in a full stack is shown in the package documentation of
// [github.com/rampart-go/rampart].
//
// # Why budgets beat max-retries
//
// A per-request cap such as "at most 3 attempts" does nothing for the
// dependency. While it is healthy, few calls fail and retries are rare;
// when it weakens, every call fails and every caller retries, so its load
// is multiplied by the number of attempts exactly when it can least afford
// it, and nested retry layers multiply again. That retry storm can keep a
// dependency down long after the fault that started it.
//
// A budget bounds the total instead. Every request deposits a fraction of
// a retry (Ratio, 0.2 by default) and every retry withdraws a whole one,
// so retries add at most 20% to the load however many calls fail. A floor
// of retries per second (MinPerSecond, 10 by default) lets a client with
// little traffic still retry a blip. Credit expires after a window (10s by
// default), so an hour of healthy traffic cannot pay for a storm. Keep
// MaxAttempts as well: it bounds one request's latency, the budget bounds
// the fleet's load.
package budget
