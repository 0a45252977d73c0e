// Command outage shows a retry storm keeping a recovering backend down, and
// rampart ending it.
//
// It starts two identical backends, net/http servers on 127.0.0.1 with a
// fixed number of workers and a bounded queue (see backend.go for the
// model), and drives each with the same load of caller requests through a
// different client: a naive client that retries every failure at once, a
// fixed number of times, and a rampart client (retry within a retry budget,
// a circuit breaker and a per-attempt timeout, through ramparthttp). On one
// shared schedule the backends' downstream stalls for a while (the fault)
// and then recovers. The backend behind the naive client stays down long
// after the fault has gone, because the retries keep its queue full of
// requests whose callers have already given up; the one behind rampart
// serves again about a cool-down after the fault ends.
//
// At the end it prints a side-by-side table and a one-line sparkline per
// timeline, or with -json one JSON object, and, only when -chart names a
// file, writes a timeline chart of both clients there (a PNG). The run
// runs in real time, so its figures are the machine's as well as the
// clients': it measures how late it started calls, and the table says
// when that shows the machine was busy.
//
//	go run ./examples/outage
//	go run ./examples/outage -json
//	go run ./examples/outage -chart examples/outage/outage.png   # the README's picture
//	go run ./examples/outage -metrics :9090 -after 5m             # watch it in Prometheus/Grafana
//	go run ./examples/outage -shadows                             # two shadow breakers beside the live one
//	go run ./examples/outage -candidates cmd/rampart-sim/testdata/candidates.toml   # the file's breakers as shadows
//	go run ./examples/outage -debug :8080                         # watch the live page at /debug/rampart
//
// With -shadows, two candidate breakers (package shadow) watch the
// rampart client's attempts beside its live breaker, without changing any,
// and a second table (the one rampart-sim prints for a replay) compares
// what each would have refused and cost. With -candidates FILE the
// shadows are the breakers of a settings file's candidates (package
// ramparttoml; rampart-sim's candidates file), so a configuration a
// replay found is shadowed as it is.
//
// With -metrics, the rampart client's breaker, retries and budget report
// their events (package observe) to OpenTelemetry metrics (module
// rampartotel), served at /metrics through the OpenTelemetry Prometheus
// exporter while the demo runs and until it is interrupted afterwards:
// rampart_breaker_state shows the breaker open and close, and
// rampart_retry_retries_total and rampart_budget_refusals_total the
// retries the budget allowed and refused.
//
// With -debug, the rampart client's breaker and budget are registered on
// the live page of package inspect, served at /debug/rampart while the
// demo runs and until it is interrupted afterwards: the breaker's row
// turns open during the fault, with the trip's cause and the transitions.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/rampart-go/rampart/inspect"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ramparttoml"
	"github.com/rampart-go/rampart/shadow"
	"github.com/rampart-go/rampart/sim"
)

// loadShadows returns the breakers of the settings file at path as shadow
// candidates: every candidate with a [candidate.breaker] table (the run
// fails with shadow.New's error if they are more than
// shadow.MaxCandidates).
func loadShadows(path string) ([]shadow.Candidate, error) {
	f, err := ramparttoml.Load(path)
	if err != nil {
		return nil, err
	}
	var out []shadow.Candidate
	for _, c := range f.Candidates {
		if sc, err := c.Shadow(); err == nil {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no candidate has a [candidate.breaker] table to shadow", path)
	}
	return out, nil
}

type options struct {
	healthy, fault, after time.Duration
	rate                  float64 // caller requests per second, per client

	workers int
	queue   int
	work    time.Duration
	stall   time.Duration

	attemptTimeout time.Duration
	naiveRetries   int
	coolDown       time.Duration

	chart   string
	jsonOut bool

	shadows bool // run two shadow breakers beside the live one and print their table
	// candidates, when set (-candidates), are the shadows instead of the
	// two built in: the breakers of a settings file's candidates.
	candidates []shadow.Candidate

	metrics string // address to serve /metrics on; empty for none
	// observer receives the rampart client's events; nil for none.
	observer observe.Observer

	debug string // address to serve /debug/rampart on; empty for none
	// registry shows the rampart client's breaker and budget; nil for none.
	registry *inspect.Registry
}

// defaults returns the demo's default options: a 30-second run.
func defaults() options {
	return options{
		healthy: 5 * time.Second, fault: 5 * time.Second, after: 20 * time.Second,
		rate:    250,
		workers: 4, queue: 256, work: 10 * time.Millisecond, stall: time.Second,
		attemptTimeout: 250 * time.Millisecond, naiveRetries: 3, coolDown: time.Second,
	}
}

func main() {
	o := defaults()
	flag.DurationVar(&o.healthy, "healthy", o.healthy, "how long the backend runs before the fault")
	flag.DurationVar(&o.fault, "fault", o.fault, "how long the fault lasts: the backend's downstream stalls")
	flag.DurationVar(&o.after, "after", o.after, "how long the load runs after the fault ends")
	flag.Float64Var(&o.rate, "rate", o.rate, "caller requests per second to each client, evenly spaced (at least 1)")
	flag.IntVar(&o.workers, "workers", o.workers, "backend workers: requests worked on at once")
	flag.IntVar(&o.queue, "queue", o.queue, "backend queue: requests waiting for a worker, at most; more are refused with a 503")
	flag.DurationVar(&o.work, "work", o.work, "a worker's time on one request (capacity: workers/work requests per second)")
	flag.DurationVar(&o.stall, "stall", o.stall, "during the fault, how long a worker waits on the stalled downstream before answering 503")
	flag.DurationVar(&o.attemptTimeout, "attempt-timeout", o.attemptTimeout, "per-attempt timeout of both clients")
	flag.IntVar(&o.naiveRetries, "naive-retries", o.naiveRetries, "retries the naive client makes after each failure")
	flag.DurationVar(&o.coolDown, "cool-down", o.coolDown, "rampart breaker's cool-down")
	flag.StringVar(&o.chart, "chart", o.chart, "write the timeline chart, a PNG, to this file; empty (the default) for none")
	flag.BoolVar(&o.jsonOut, "json", false, "print the summary as one JSON object instead of the table")
	flag.BoolVar(&o.shadows, "shadows", false, "run two candidate breakers (package shadow) beside the rampart client's on the same attempts, and print their table next to the live breaker's")
	cands := flag.String("candidates", "", "shadow the breakers of this settings `file`'s candidates (package ramparttoml: rampart-sim's candidates file) instead of the two built in; implies -shadows")
	flag.StringVar(&o.metrics, "metrics", "", "serve the rampart client's metrics for Prometheus at this address (such as :9090) on /metrics, until interrupted after the run; empty for none")
	flag.StringVar(&o.debug, "debug", "", "serve the live page of the rampart client's breaker and budget at this address (such as :8080) on /debug/rampart, until interrupted after the run; empty for none")
	flag.Parse()
	if *cands != "" {
		var err error
		if o.candidates, err = loadShadows(*cands); err != nil {
			fmt.Fprintln(os.Stderr, "outage:", err)
			os.Exit(2)
		}
		o.shadows = true
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(2)
	}
	if o.metrics != "" {
		obs, addr, stop, err := serveMetrics(o.metrics)
		if err != nil {
			fmt.Fprintln(os.Stderr, "outage:", err)
			os.Exit(1)
		}
		defer stop()
		fmt.Fprintf(os.Stderr, "metrics on http://%s/metrics\n", addr)
		o.observer = obs
	}
	if o.debug != "" {
		reg, addr, stop, err := serveDebug(o.debug)
		if err != nil {
			fmt.Fprintln(os.Stderr, "outage:", err)
			os.Exit(1)
		}
		defer stop()
		fmt.Fprintf(os.Stderr, "live page on http://%s%s\n", addr, debugPath)
		o.registry = reg
	}
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(1)
	}
	if o.metrics != "" || o.debug != "" {
		fmt.Fprintln(os.Stderr, "run over; still serving, interrupt to stop")
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt)
		<-stop
	}
}

func (o options) validate() error {
	switch {
	case o.healthy < 0:
		return fmt.Errorf("-healthy must be >= 0, got %v", o.healthy)
	case o.fault <= 0:
		return fmt.Errorf("-fault must be > 0, got %v", o.fault)
	case o.after <= 0:
		return fmt.Errorf("-after must be > 0, got %v", o.after)
	case !(o.rate >= 1 && o.rate <= 1e5):
		return fmt.Errorf("-rate must be between 1 and 100000 requests per second, got %g", o.rate)
	case o.workers < 1:
		return fmt.Errorf("-workers must be >= 1, got %d", o.workers)
	case o.queue < 0:
		return fmt.Errorf("-queue must be >= 0, got %d", o.queue)
	case o.work <= 0:
		return fmt.Errorf("-work must be > 0, got %v", o.work)
	case o.stall <= 0:
		return fmt.Errorf("-stall must be > 0, got %v", o.stall)
	case o.attemptTimeout <= 0:
		return fmt.Errorf("-attempt-timeout must be > 0, got %v", o.attemptTimeout)
	case o.naiveRetries < 0:
		return fmt.Errorf("-naive-retries must be >= 0, got %d", o.naiveRetries)
	case o.coolDown <= 0:
		return fmt.Errorf("-cool-down must be > 0, got %v", o.coolDown)
	}
	return nil
}

func (o options) model() model {
	return model{
		workers: o.workers, queue: o.queue, work: o.work, stall: o.stall,
		faultStart: o.healthy, faultEnd: o.healthy + o.fault,
	}
}

// total is how long the load runs.
func (o options) total() time.Duration { return o.healthy + o.fault + o.after }

// seconds is how many one-second timeline entries the run has: the last
// one may be partial.
func (o options) seconds() int { return int((o.total() + time.Second - 1) / time.Second) }

// run runs the demo on real loopback HTTP, prints the summary to out and
// the phases, as they happen, to progress, and writes the chart.
func run(o options, out, progress io.Writer) error {
	r, err := simulate(o, loopback, progress)
	if err != nil {
		return err
	}
	for name, s := range map[string]summary{"naive": r.Naive, "rampart": r.Rampart} {
		if s.Lost != 0 {
			return fmt.Errorf("%s client lost %d calls: started %d, finished %d", name, s.Lost, s.CallerRequests, s.CallerRequests-s.Lost)
		}
	}
	if o.chart != "" {
		if err := writeChart(r, o.chart); err != nil {
			return err
		}
		fmt.Fprintf(progress, "chart written to %s\n", o.chart)
	}
	if o.jsonOut {
		return json.NewEncoder(out).Encode(r)
	}
	printTable(out, r)
	if r.shadows != nil {
		fmt.Fprintf(out, "\nthe rampart client's breaker (live) and %d shadows on the same attempts:\n", len(r.shadows)-1)
		return sim.WriteTable(out, r.shadows)
	}
	return nil
}
