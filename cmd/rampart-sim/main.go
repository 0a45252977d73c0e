// Command rampart-sim replays a recorded trace of calls to a dependency
// (JSON Lines, as package record writes it) through candidate
// configurations read from a TOML file, on virtual time, and compares
// what each would have done: a table, or JSON with -json, and a chart of
// each candidate's state and outcomes over time.
//
//	go run ./cmd/rampart-sim -trace sim/testdata/outage.jsonl \
//		-candidates cmd/rampart-sim/testdata/candidates.toml -chart outage.png
//
// -trace - reads the trace from standard input. The chart's file is
// created before the replay, so a bad -chart path is reported at once.
//
// The candidates file has an optional [options] table and one
// [[candidate]] table per candidate; every key is optional except name,
// and a key the command does not know is an error:
//
//	[options]
//	burst_min = 5        # consecutive recorded failures that make a burst
//	resolution = "1s"    # width of the chart's points
//	seed = 1             # seed of the retries' jitter
//
//	[[candidate]]
//	name = "consecutive 5"
//	timeout = "1s"                       # per-attempt timeout
//	[candidate.breaker]
//	cool_down = "10s"                # or "immediate", "forever"
//	max_cool_down = "1m"             # a growing cool-down
//	cool_down_multiplier = 2
//	max_probes = 1
//	probe_lease = "1m"
//	[candidate.breaker.consecutive]      # the trip rule: one or more of
//	failures = 5                         # consecutive, failure_rate,
//	successes = 1                        # slow_calls (several: any trips)
//	[candidate.breaker.failure_rate]
//	ratio = 0.5
//	window = {size = 20, period = "10s", buckets = 10, min_calls = 20}
//	[candidate.breaker.slow_calls]
//	threshold = "1s"
//	ratio = 1.0
//	window = {size = 20}
//	[candidate.breaker.probes]           # close on a success ratio of probes
//	probes = 10
//	ratio = 0.8
//	[candidate.retry]
//	max_attempts = 3
//	base = "100ms"
//	max = "10s"
//	multiplier = 2
//	jitter = "full"                      # equal, decorrelated, none
//	no_budget = false                    # true: retries not budgeted
//	[candidate.retry.budget]             # without it (and without
//	window = "10s"                       # no_budget), the retry layer's
//	min_per_second = 10                  # default budget: 20% of recent
//	ratio = 0.2                          # calls plus 10 a second;
//	                                     # min_per_second -1: no floor
//
// Each value means what the field of the same name means in the rampart
// package that takes it (circuitbreaker.Config, circuitbreaker.Consecutive,
// retry.Exponential, budget.Config…), zero values included. An error in
// either file names the file, the line and the field; bad trace lines
// stop the replay unless -skip-bad is given, and then their count is
// reported. A trace with no calls (empty, or every line skipped) is an
// error: there is nothing to compare.
//
// Trace lines need not be in order of start (a recorder writes a call when
// it returns, so a long call comes after shorter ones that started later):
// a line may start up to -reorder (default 1m) before the latest start read
// before it; -reorder 0 requires strict order.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rampart-go/rampart/sim"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "rampart-sim:", err)
		os.Exit(1)
	}
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// errUsage is returned for bad flags, after the usage was printed.
var errUsage = errors.New("bad usage")

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rampart-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	trace := fs.String("trace", "", "the recorded `trace` (JSON Lines), - for standard input; required")
	cands := fs.String("candidates", "", "the candidates `file` (TOML); required")
	asJSON := fs.Bool("json", false, "print the results as JSON instead of a table")
	chart := fs.String("chart", "rampart-sim.png", "write the chart to this PNG `file`; empty for none")
	skip := fs.Bool("skip-bad", false, "skip bad trace lines (and report how many) instead of stopping at the first")
	reorder := fs.Duration("reorder", sim.DefaultReorder, "how far back a trace line may start, compared with the latest start before it, and still be replayed in order; 0 for none")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *reorder < 0 {
		fmt.Fprintf(stderr, "-reorder must be 0 (lines strictly in order) or positive, got %v\n", *reorder)
		fs.Usage()
		return errUsage
	}
	if *trace == "" || *cands == "" || fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	candidates, opt, err := loadCandidates(*cands, stderr)
	if err != nil {
		return err
	}
	in, name := stdin, "standard input"
	if *trace != "-" {
		f, err := os.Open(*trace)
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, *trace
	}
	// Open the chart's file now, so that a bad path is reported before a
	// replay that may take a while; it is removed if the replay fails.
	var chartFile *os.File
	if *chart != "" {
		if chartFile, err = os.Create(*chart); err != nil {
			return fmt.Errorf("-chart: %w", err)
		}
		defer func() {
			if chartFile != nil { // not written
				_ = chartFile.Close()
				_ = os.Remove(*chart)
			}
		}()
	}
	tr := sim.NewTraceReader(in, name)
	tr.Skip, tr.Reorder = *skip, *reorder
	results, err := sim.Replay(tr, candidates, opt)
	if err != nil {
		return err
	}
	if results[0].Calls == 0 {
		if tr.Skipped > 0 {
			return fmt.Errorf("%s: no calls to replay (%d bad %s skipped)", name, tr.Skipped, plural(tr.Skipped, "line", "lines"))
		}
		return fmt.Errorf("%s: no calls to replay: the trace is empty", name)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Trace   string       `json:"trace"`
			Skipped int          `json:"skipped_lines"`
			Results []sim.Result `json:"results"`
		}{name, tr.Skipped, results}); err != nil {
			return err
		}
	} else {
		if err := sim.WriteTable(stdout, results); err != nil {
			return err
		}
		if *skip {
			fmt.Fprintf(stdout, "\n%d bad trace %s skipped\n", tr.Skipped, plural(tr.Skipped, "line", "lines"))
		}
	}
	if chartFile != nil {
		err := writeChart(chartFile, results, name)
		if cerr := chartFile.Close(); err == nil {
			err = cerr
		}
		chartFile = nil
		if err != nil {
			_ = os.Remove(*chart)
			return fmt.Errorf("-chart %s: %w", *chart, err)
		}
	}
	return nil
}
