// Chain runs callers → A → B → C, three net/http servers on 127.0.0.1 of
// finite capacity, through a brownout at C (its work per request takes
// several times longer for a few seconds), twice with the same load:
// naive (every hop retries 3 times at once, no deadlines, no criticality)
// and rampart (breakers, budgeted retries that do not multiply across
// hops, propagated deadlines, criticality shedding and an adaptive limit
// at C). It prints a table of each run's four figures and its 1s windows,
// or with -json one JSON object, and with -chart a PNG of both runs.
//
//	go run ./examples/chain
//	go run ./examples/chain -json
//	go run ./examples/chain -chart chain.png
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	cfg := defaults
	flag.Float64Var(&cfg.rate, "rate", cfg.rate, "caller requests per second, evenly spaced")
	flag.DurationVar(&cfg.healthy, "healthy", cfg.healthy, "how long the chain runs before the brownout")
	flag.DurationVar(&cfg.fault, "fault", cfg.fault, "how long the brownout lasts")
	flag.DurationVar(&cfg.after, "after", cfg.after, "how long the load runs after the brownout")
	flag.IntVar(&cfg.slowdown, "slowdown", cfg.slowdown, "how many times longer C's work per request takes during the brownout")
	flag.IntVar(&cfg.workers, "workers", cfg.workers, "C's workers")
	flag.DurationVar(&cfg.work, "work", cfg.work, "C's work per request (capacity: workers/work requests per second)")
	jsonOut := flag.Bool("json", false, "print one JSON object with both runs' figures and windows instead of the table")
	chart := flag.String("chart", "", "also write a chart of both runs (requests per second at each tier, and answered by criticality) to this PNG file; empty for none")
	flag.Parse()
	if cfg.rate < 1 || cfg.workers < 1 || cfg.slowdown < 1 || cfg.work <= 0 {
		fmt.Fprintln(os.Stderr, "chain: -rate, -workers and -slowdown must be at least 1, -work positive")
		os.Exit(2)
	}
	var out []summary
	for _, rampartRun := range []bool{false, true} {
		name := "naive"
		if rampartRun {
			name = "rampart"
		}
		rec, err := run(cfg, &loopback{}, rampartRun)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chain:", err)
			os.Exit(1)
		}
		out = append(out, summarize(name, cfg, rec))
	}
	if *chart != "" {
		if err := writeChart(cfg, out, *chart); err != nil {
			fmt.Fprintln(os.Stderr, "chain: writing the chart:", err)
			os.Exit(1)
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"config": cfg.String(), "runs": out})
		return
	}
	table(os.Stdout, cfg, out)
}

// table prints the runs' figures and windows.
func table(w io.Writer, cfg config, runs []summary) {
	fmt.Fprintf(w, "chain: %v\n\n", cfg)
	fmt.Fprintf(w, "%-8s %18s %14s %14s %12s   %s\n", "run", "max attempts at C", "wasted at C", "min critical", "recovered", "ok sheddable/default/critical")
	for _, s := range runs {
		rec := "never"
		if s.Recovered >= 0 {
			rec = "+" + s.Recovered.String()
		}
		fmt.Fprintf(w, "%-8s %17.2fx %13.1f%% %13.1f%% %12s   %.1f%% / %.1f%% / %.1f%%\n", s.Run, s.MaxAttemptsAtCPerRequest, 100*s.WastedShareAtC, 100*s.MinCriticalOK, rec, 100*s.OK[0], 100*s.OK[1], 100*s.OK[2])
	}
	fmt.Fprintln(w, "\ntargets for rampart: attempts at C <= 1.5x requests in every window; wasted <= 5%; critical >= 95% in every window; recovered <= cool-down + 1s")
	for _, s := range runs {
		fmt.Fprintf(w, "\n%s, by 1s window (brownout in windows %d..%d):\n", s.Run, cfg.healthy/time.Second, (cfg.healthy+cfg.fault)/time.Second-1)
		fmt.Fprintf(w, "%4s %6s %9s %8s %8s %8s %9s\n", "s", "reqs", "at C", "ok", "critical", "shed.", "wasted")
		for i, win := range s.Windows {
			req := win.Requests[0] + win.Requests[1] + win.Requests[2]
			okAll := win.OK[0] + win.OK[1] + win.OK[2]
			wasted := 0.0
			if win.WorkC > 0 {
				wasted = float64(win.WastedC) / float64(win.WorkC)
			}
			fmt.Fprintf(w, "%4d %6d %8.2fx %7.1f%% %7.1f%% %7.1f%% %8.1f%%\n", i, req, float64(win.AtC)/float64(req), 100*share(okAll, req), 100*share(win.OK[2], win.Requests[2]), 100*share(win.OK[0], win.Requests[0]), 100*wasted)
		}
	}
}
