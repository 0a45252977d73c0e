// Package sim replays a recorded trace of calls to a dependency through
// candidate configurations (a circuit breaker's policy and numbers, its
// cool-down and probes, retries with a budget, a timeout) on virtual
// time, and reports what each would have done: calls sent, calls refused
// that would have succeeded, failures that reached callers, time open, how
// soon the breaker noticed a burst of failures and how soon traffic flowed
// after it. Hours of traffic replay in seconds, before the next incident
// rather than during it.
//
// # Quick start
//
//	f, _ := os.Open("trace.jsonl") // written by package record
//	results, err := sim.Replay(sim.NewTraceReader(f, "trace.jsonl"), []sim.Candidate{
//		{Name: "5 in a row", Breaker: &circuitbreaker.Config{}},
//		{Name: "half of 20", Breaker: &circuitbreaker.Config{
//			Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 20}}}},
//	}, sim.Config{})
//
// The command rampart-sim (cmd/rampart-sim) reads candidates from a TOML
// file and prints a table, JSON and a chart.
//
// # How a replay runs
//
// Each recorded call starts at its recorded time and goes through the
// candidate's real rampart layers, built with a [clock.Clock] that is a
// discrete-event scheduler: each call runs on a goroutine of its own, the
// simulated dependency sleeps the recorded duration on the virtual clock,
// and the clock jumps to the next event only when the one goroutine
// running has blocked on it or returned. Calls therefore run one at a
// time, and a replay is deterministic: the same trace, candidates and
// Config give the same results (retry jitter comes from a source seeded
// with [Config.Seed]).
//
// Supported layers are those the simulator builds: circuitbreaker,
// retry with budget, and timeout (without Abandon). Layers that block on
// anything but the clock (a concurrency limit's queue) or start
// goroutines of their own (hedging, timeout's Abandon) cannot be
// replayed this way.
//
// The trace is read once, streaming: memory holds the calls in flight,
// the lines started within the reader's reorder window
// ([TraceReader.Reorder]; a recorder writes calls as they return, so
// lines come a little out of order) and a bounded series per candidate
// ([Config.MaxPoints]), whatever the trace's length.
package sim

import "github.com/rampart-go/rampart/clock"

var _ clock.Sleeper = (*scheduler)(nil)

//go:generate go run ./internal/tracegen/gentraces testdata
