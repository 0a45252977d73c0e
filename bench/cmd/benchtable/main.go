// Command benchtable turns the output of rampart's side-by-side benchmarks
// into the Markdown tables of bench/README.md: per scenario, the median of
// each contender's ns/op, B/op and allocs/op, its ratio to the floor and how
// many times faster rampart is; then rampart's performance targets (issue 5),
// each marked met or not met.
//
// Usage:
//
//	benchtable results.txt > table.md
//
// The input is `go test -bench` output, several runs of each benchmark
// (-count) concatenated; medians are taken over the runs, as benchstat does.
// Benchmarks named BenchmarkXParallel are the RunParallel variants of
// BenchmarkX. Configuration lines (`cpu: ...`, `go: ...`, `nproc: ...`)
// describe the machine.
package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtable results.txt")
		os.Exit(2)
	}
	r, err := read(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	r.write(os.Stdout)
}

// cell identifies one benchmark: a contender in a scenario, run serially or
// in parallel with procs GOMAXPROCS.
type cell struct {
	scenario, contender string
	parallel            bool
	procs               int
}

// stats holds the medians of one cell's runs, by unit.
type stats map[string]float64

type results struct {
	config    map[string]string // machine configuration lines
	order     []string          // scenarios in order of first appearance
	contender map[string][]string
	medians   map[cell]stats
	// runs holds each cell's ns/op samples in the order they were run: run
	// i of every cell comes from round i of run.sh.
	runs map[cell][]float64
}

func read(path string) (*results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	r := &results{config: map[string]string{}, contender: map[string][]string{}, medians: map[cell]stats{}, runs: map[cell][]float64{}}
	samples := map[cell]map[string][]float64{}
	reader := benchfmt.NewReader(f, path)
	for reader.Scan() {
		res, ok := reader.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		for _, c := range res.Config {
			r.config[c.Key] = string(c.Value)
		}
		c := parseName(res.Name.String())
		if _, seen := samples[c]; !seen {
			samples[c] = map[string][]float64{}
			if !slices.Contains(r.order, c.scenario) {
				r.order = append(r.order, c.scenario)
			}
			if !slices.Contains(r.contender[c.scenario], c.contender) {
				r.contender[c.scenario] = append(r.contender[c.scenario], c.contender)
			}
		}
		for _, v := range res.Values {
			samples[c][v.Unit] = append(samples[c][v.Unit], v.Value)
		}
	}
	if err := reader.Err(); err != nil {
		return nil, err
	}
	for c, units := range samples {
		r.medians[c] = stats{}
		for unit, vs := range units {
			r.medians[c][unit] = median(vs)
		}
		if vs := units["sec/op"]; len(vs) > 0 {
			r.medians[c]["min sec/op"] = slices.Min(vs)
			r.medians[c]["max sec/op"] = slices.Max(vs)
			for _, v := range vs {
				r.runs[c] = append(r.runs[c], v*1e9)
			}
		}
	}
	return r, nil
}

// parseName splits "ClosedSuccessParallel/rampart-2" (the Benchmark prefix
// already removed by benchfmt) into its cell.
func parseName(name string) cell {
	c := cell{procs: 1}
	if i := strings.LastIndexByte(name, '-'); i >= 0 {
		if n, err := strconv.Atoi(name[i+1:]); err == nil {
			c.procs, name = n, name[:i]
		}
	}
	c.scenario, c.contender, _ = strings.Cut(name, "/")
	if s, ok := strings.CutSuffix(c.scenario, "Parallel"); ok {
		c.scenario, c.parallel = s, true
	}
	return c
}

func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// column is one way a scenario was run: serial or parallel, at procs.
type column struct {
	parallel bool
	procs    int
}

func (c column) String() string {
	if c.parallel {
		return fmt.Sprintf("parallel -cpu %d", c.procs)
	}
	return fmt.Sprintf("serial -cpu %d", c.procs)
}

func (r *results) columns(scenario string) []column {
	var cols []column
	for c := range r.medians {
		col := column{c.parallel, c.procs}
		if c.scenario == scenario && !slices.Contains(cols, col) {
			cols = append(cols, col)
		}
	}
	slices.SortFunc(cols, func(a, b column) int {
		if a.parallel != b.parallel {
			if a.parallel {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.procs, b.procs)
	})
	return cols
}

func (r *results) write(w io.Writer) {
	cpu := cmp.Or(r.config["cpumodel"], r.config["cpu"])
	fmt.Fprintf(w, "rampart commit %s. Machine: %s, %s/%s, nproc %s; %s. Load average (1, 5, 15 min) at the start: %s.\n\n",
		r.config["commit"], cpu, r.config["goos"], r.config["goarch"], r.config["nproc"], r.config["go"], cmp.Or(r.config["load"], "not recorded"))
	for _, s := range r.scenarios() {
		r.writeScenario(w, s)
	}
	r.writeTargets(w)
}

// order is the order of the scenarios in the README: the breaker, its
// policies, retry, timeout, budget, then the reference rows. Scenarios not
// listed follow in the order they were run.
var order = []string{
	"ClosedSuccess", "ClosedFail10", "OpenReject", "CountWindow", "TimeWindow", "SlowCalls",
	"RetrySuccess", "RetryStack", "Timeout", "TimeoutStack", "BudgetDeposit", "BudgetWithdraw", "Clock",
}

// scenarios returns the scenarios of r in README order.
func (r *results) scenarios() []string {
	var s []string
	for _, name := range order {
		if slices.Contains(r.order, name) {
			s = append(s, name)
		}
	}
	for _, name := range r.order {
		if !slices.Contains(order, name) {
			s = append(s, name)
		}
	}
	return s
}

// writeScenario writes one scenario's table: for each column (serial,
// parallel) the median ns/op, then for the first column the ratio to the
// floor and how many times faster rampart is, then B/op and allocs/op.
func (r *results) writeScenario(w io.Writer, scenario string) {
	cols := r.columns(scenario)
	if len(cols) == 0 {
		return
	}
	base := cols[0]
	fmt.Fprintf(w, "### %s\n\n| contender |", scenario)
	for _, col := range cols {
		fmt.Fprintf(w, " ns/op %s, median (min–max) |", col)
	}
	fmt.Fprintf(w, " × floor (%s) | rampart faster by (%s) | B/op | allocs/op |\n|---|", base, base)
	for range len(cols) + 4 {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	floor := r.ns(cell{scenario, "floor", base.parallel, base.procs})
	ours := r.ns(cell{scenario, "rampart", base.parallel, base.procs})
	for _, name := range r.contender[scenario] {
		fmt.Fprintf(w, "| %s |", name)
		for _, col := range cols {
			c := cell{scenario, name, col.parallel, col.procs}
			fmt.Fprintf(w, " %s (%s–%s) |", num(r.ns(c)), num(r.medians[c]["min sec/op"]*1e9), num(r.medians[c]["max sec/op"]*1e9))
		}
		c := cell{scenario, name, base.parallel, base.procs}
		ns := r.ns(c)
		faster := "–" // rampart against itself or the floor says nothing
		if name != "floor" && !strings.HasPrefix(name, "rampart") {
			faster = ratio(ns, ours)
		}
		fmt.Fprintf(w, " %s | %s | %s | %s |\n", ratio(ns, floor), faster,
			count(r.medians[c]["B/op"]), count(r.medians[c]["allocs/op"]))
	}
	fmt.Fprintln(w)
}

// ns returns c's median ns/op, or 0 if c was not run.
func (r *results) ns(c cell) float64 { return r.medians[c]["sec/op"] * 1e9 }

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// count formats a median of counts (bytes, allocations): an integer, or a
// half when the median fell between two runs.
func count(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
}
