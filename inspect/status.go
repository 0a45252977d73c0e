package inspect

import "time"

// Status is what the page shows, and its JSON form (?format=json). Every
// list is in the order its values were registered, and present (empty
// rather than null) when nothing of its kind is.
type Status struct {
	// Time is when the status was read.
	Time time.Time `json:"time"`
	// Breakers are the breakers added with AddBreaker.
	Breakers []BreakerStatus `json:"breakers"`
	// Groups are the groups added with AddGroup.
	Groups []GroupStatus `json:"groups"`
	// Budgets are the budgets added with AddBudget.
	Budgets []BudgetStatus `json:"budgets"`
	// Limiters are the limiters added with AddLimiter.
	Limiters []LimiterStatus `json:"limiters"`
	// Fleets are the fleets added with AddFleet.
	Fleets []FleetStatus `json:"fleets"`
	// Transitions are the latest transitions of the breakers that report
	// to the Registry's Observer, newest first.
	Transitions []Transition `json:"transitions"`
}

// BreakerStatus is one breaker's row: its circuitbreaker.Snapshot, with
// what the Registry's Observer keeps for it.
type BreakerStatus struct {
	// Name is the breaker's Config.Name.
	Name string `json:"name"`
	// Key is the breaker's key in its group (as fmt.Sprint prints it);
	// empty for a breaker added on its own.
	Key string `json:"key,omitempty"`
	// State is the state, as circuitbreaker.State prints it: "closed",
	// "open", "half-open", "forced-open" or "forced-closed".
	State string `json:"state"`
	// Since is when the breaker entered State (its creation, or its
	// latest transition), as the Registry's Observer saw it; zero, and
	// left out of the JSON, when the breaker does not report to it, or
	// when its cool-down has ended and no call has found it half-open yet
	// (the move is reported by that call).
	Since time.Time `json:"since,omitzero"`
	// RetryAfterSeconds is the rest of the cool-down, in seconds; -1 when
	// no probe will be admitted by itself (forced open, or a cool-down of
	// rampart.Forever); zero (left out) otherwise.
	RetryAfterSeconds float64 `json:"retry_after_seconds,omitempty"`
	// Cause is the trip's failure, or the reason the breaker was forced
	// open, as its Error method says it.
	Cause string `json:"cause,omitempty"`
	// ConsecutiveFailures, Calls, Failures and SlowCalls are the policy's
	// counters of the current Closed period (circuitbreaker.Counts):
	// a policy fills the ones it keeps.
	ConsecutiveFailures int `json:"consecutive_failures"`
	Calls               int `json:"calls"`
	Failures            int `json:"failures"`
	SlowCalls           int `json:"slow_calls"`
	// ProbesInFlight, ProbesSucceeded and ProbesFailed count the probes
	// of the current HalfOpen period.
	ProbesInFlight  int `json:"probes_in_flight"`
	ProbesSucceeded int `json:"probes_succeeded"`
	ProbesFailed    int `json:"probes_failed"`
	// Remote is true for an Open (and the HalfOpen after it) applied from
	// the fleet's shared record.
	Remote bool `json:"remote"`
	// Rejected is how many calls the breaker refused, as its Observer was
	// told, since the Registry's Observer first saw its name.
	Rejected int64 `json:"rejected"`
}

// GroupStatus is one circuitbreaker.Group's rows.
type GroupStatus struct {
	// Name is the name the group was added under.
	Name string `json:"name"`
	// Breakers are the breakers the group holds, oldest key first, then
	// its overflow breaker when it is in use.
	Breakers []BreakerStatus `json:"breakers"`
}

// BudgetStatus is one retry budget's row.
type BudgetStatus struct {
	// Name is the name the budget was added under.
	Name string `json:"name"`
	// Balance is how many retries may be withdrawn now (Budget.Balance).
	Balance float64 `json:"balance"`
	// Refused is how many withdrawals the budget refused, as the
	// Registry's Observer was told (the budget's Config.Observer, under
	// the same Name).
	Refused int64 `json:"refused"`
}

// LimiterStatus is one concurrency limit's row.
type LimiterStatus struct {
	// Name is the name the limiter was added under.
	Name string `json:"name"`
	// Kind is "fixed" for a *concurrency.Limiter, "adaptive" for a
	// *concurrency.AdaptiveLimiter.
	Kind string `json:"kind"`
	// Limit is how many calls may run at once now.
	Limit int `json:"limit"`
	// InFlight is how many calls are running.
	InFlight int `json:"in_flight"`
	// BaselineSeconds is an adaptive limiter's no-load latency estimate,
	// in seconds; zero (left out) for a fixed one or before any estimate.
	BaselineSeconds float64 `json:"baseline_seconds,omitempty"`
	// Refused is how many calls the limit's layers refused, as the
	// Registry's Observer was told by layers of the same Name.
	Refused int64 `json:"refused"`
}

// Transition is one breaker transition the Registry's Observer was told
// of.
type Transition struct {
	// Time is when the Observer was told, by the system's clock.
	Time time.Time `json:"time"`
	// Name is the breaker's name.
	Name string `json:"name"`
	// From and To are the states before and after.
	From string `json:"from"`
	To   string `json:"to"`
	// Cause is the failure behind a trip, or the reason for a forced
	// open; empty otherwise.
	Cause string `json:"cause,omitempty"`
}
