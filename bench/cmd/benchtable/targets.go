package main

import (
	"fmt"
	"io"
)

// A target is one of rampart's performance targets (issue 5): a measured
// value that must stay at most (or, for speed-ups, at least) a limit.
type target struct {
	what     string
	measured func(r *results) float64
	limit    func(r *results) float64
	atLeast  bool   // the measured value must be >= limit, not <=
	unit     string // of measured and limit
}

// serial and parallel name the cells the targets compare: serial runs at
// -cpu 1, parallel runs at -cpu 2, as run.sh runs them.
func serial(scenario, contender string) cell   { return cell{scenario, contender, false, 1} }
func parallel(scenario, contender string) cell { return cell{scenario, contender, true, 2} }

func ns(c cell) func(*results) float64 {
	return func(r *results) float64 { return r.ns(c) }
}

func allocs(c cell) func(*results) float64 {
	return func(r *results) float64 {
		if _, ok := r.medians[c]; !ok {
			return -1 // not measured
		}
		return r.medians[c]["allocs/op"]
	}
}

func constant(v float64) func(*results) float64 { return func(*results) float64 { return v } }

// plus returns the limit "c's ns/op + d ns".
func plus(c cell, d float64) func(*results) float64 {
	return func(r *results) float64 { return r.ns(c) + d }
}

// times returns the limit "c's ns/op × f".
func times(c cell, f float64) func(*results) float64 {
	return func(r *results) float64 { return r.ns(c) * f }
}

// speedup returns how many times faster rampart's cell is than peer's.
func speedup(peer, ours cell) func(*results) float64 {
	return func(r *results) float64 {
		if r.ns(ours) == 0 {
			return 0
		}
		return r.ns(peer) / r.ns(ours)
	}
}

var targets = []target{
	{"Closed breaker, success: ≤ floor + 15 ns", ns(serial("ClosedSuccess", "rampart")), plus(serial("ClosedSuccess", "floor"), 15), false, "ns"},
	{"Closed breaker, success: 0 allocs", allocs(serial("ClosedSuccess", "rampart")), constant(0), false, "allocs"},
	{"Closed breaker, success: ≥ 10× faster than gobreaker", speedup(serial("ClosedSuccess", "gobreaker"), serial("ClosedSuccess", "rampart")), constant(10), true, "×"},
	{"Closed breaker, success: parallel -cpu 2 no slower per op than serial", ns(parallel("ClosedSuccess", "rampart")), ns(serial("ClosedSuccess", "rampart")), false, "ns"},
	{"Open rejection: ≤ 50 ns", ns(serial("OpenReject", "rampart")), constant(50), false, "ns"},
	{"Open rejection: 0 allocs", allocs(serial("OpenReject", "rampart")), constant(0), false, "allocs"},
	{"Retry + budget + breaker: ≤ 60 ns" + retryStackClock, ns(serial("RetryStack", "rampart")), retryStackLimit, false, "ns"},
	{"Retry + budget + breaker: 0 allocs", allocs(serial("RetryStack", "rampart")), constant(0), false, "allocs"},
	{"Retry + budget + breaker: ≥ 10× faster than failsafe-go", speedup(serial("RetryStack", "failsafe"), serial("RetryStack", "rampart")), constant(10), true, "×"},
	{"Timeout + retry + budget + breaker: ≤ bare context.WithTimeoutCause + 100 ns", ns(serial("TimeoutStack", "rampart")), plus(serial("TimeoutStack", "floor"), 100), false, "ns"},
	{"Timeout + retry + budget + breaker: ≥ 3× faster than failsafe-go", speedup(serial("TimeoutStack", "failsafe"), serial("TimeoutStack", "rampart")), constant(3), true, "×"},
	{"Timeout layer alone: within 10% of bare context.WithTimeoutCause", ns(serial("Timeout", "rampart")), times(serial("Timeout", "floor"), 1.10), false, "ns"},
	{"Budget deposit: ≤ 10 ns" + depositClock, ns(serial("BudgetDeposit", "rampart")), depositLimit, false, "ns"},
	{"Budget deposit: 0 allocs", allocs(serial("BudgetDeposit", "rampart")), constant(0), false, "allocs"},
	{"Budget deposit: parallel -cpu 2 no slower per op than serial", ns(parallel("BudgetDeposit", "rampart")), ns(serial("BudgetDeposit", "rampart")), false, "ns"},
	{"Adaptive concurrency limit, acquire + release: ≤ 50 ns", ns(serial("ConcurrencyAcquire", "rampart")), constant(50), false, "ns"},
	{"Adaptive concurrency limit, acquire + release: 0 allocs", allocs(serial("ConcurrencyAcquire", "rampart")), constant(0), false, "allocs"},
	// The breaker's speed against the fastest peer, the time window, the permit API.
	{"Open rejection: ≤ 1.5× go-resiliency's", ns(serial("OpenReject", "rampart")), times(serial("OpenReject", "resiliency"), 1.5), false, "ns"},
	{"Closed breaker, success: ≤ go-resiliency's", ns(serial("ClosedSuccess", "rampart")), ns(serial("ClosedSuccess", "resiliency")), false, "ns"},
	{"Closed breaker, success: parallel no slower than serial in every round", roundsWhere(parallel("ClosedSuccess", "rampart"), serial("ClosedSuccess", "rampart")), rounds(serial("ClosedSuccess", "rampart")), true, "rounds"},
	{"Time window, 10% failures: ≤ 40 ns", ns(serial("TimeWindow", "rampart")), constant(40), false, "ns"},
	{"Time window, 10% failures: parallel no slower per op than serial", ns(parallel("TimeWindow", "rampart")), ns(serial("TimeWindow", "rampart")), false, "ns"},
	{"Permit API: within 2 ns of the layer", ns(serial("ClosedSuccess", "rampart-permit")), plus(serial("ClosedSuccess", "rampart"), 2), false, "ns"},
}

// roundsWhere returns the number of rounds in which a's ns/op was at most
// b's (run i of a against run i of b: the same round of run.sh).
func roundsWhere(a, b cell) func(*results) float64 {
	return func(r *results) float64 {
		n := 0
		for i, v := range r.runs[a] {
			if i < len(r.runs[b]) && v <= r.runs[b][i] {
				n++
			}
		}
		return float64(n)
	}
}

// rounds returns the number of rounds c was run.
func rounds(c cell) func(*results) float64 {
	return func(r *results) float64 { return float64(len(r.runs[c])) }
}

// depositReadsClock and retryStackReadsClock say whether rampart's budget
// reads the monotonic clock on Deposit; if it does, the targets allow one
// read, measured as Clock/since.
const depositReadsClock = false

var (
	depositClock, retryStackClock string
	depositLimit                  = constant(10)
	retryStackLimit               = constant(60)
)

func init() {
	if depositReadsClock {
		since := serial("Clock", "since")
		depositClock = " + one clock read"
		retryStackClock = " + one clock read"
		depositLimit = plus(since, 10)
		retryStackLimit = plus(since, 60)
	}
}

func (r *results) writeTargets(w io.Writer) {
	fmt.Fprintln(w, "### Targets\n\n| target | measured | limit | met |\n|---|---:|---:|:---:|")
	for _, t := range targets {
		m, l := t.measured(r), t.limit(r)
		if m <= 0 && t.unit != "allocs" || m < 0 || l <= 0 && t.unit != "allocs" {
			fmt.Fprintf(w, "| %s | – | – | not measured |\n", t.what)
			continue
		}
		met := m <= l
		if t.atLeast {
			met = m >= l
		}
		verdict := "**not met**"
		if met {
			verdict = "met"
		}
		format := num
		if t.unit == "allocs" || t.unit == "rounds" {
			format = count
		}
		unit := " " + t.unit
		if t.unit == "×" {
			unit = t.unit
		}
		fmt.Fprintf(w, "| %s | %s%s | %s%s | %s |\n", t.what, format(m), unit, format(l), unit, verdict)
	}
}
