// Command fleet shows what sharing a circuit breaker's state through Redis
// buys a service that runs as many replicas.
//
// It starts one backend (a net/http server on 127.0.0.1) that fails every
// request for a while (the outage), and N replicas, each with its own HTTP
// client, circuit breaker and, when shared, its own Redis connection
// (rampartredis.Share). The same run is made twice: with independent
// breakers, each replica learning alone, and with shared state. It prints
// a side-by-side table, or with -json one JSON object: the failing calls
// the backend gets from the start of the outage until every replica
// refuses (the replicas call in lockstep, every 5ms each: independent
// breakers let 5 each through, the shared ones share failure evidence,
// rampartredis.Config.Failures, and open together after about one
// breaker's threshold), backend hits during the outage, probes while the
// backend is down and how many per HalfOpen round across the fleet, the
// time from the first trip until every replica is open, and the Redis
// commands sent (and failed). Under the table it prints Redis's round
// trips during the shared run (timed by a go-redis hook on the replicas'
// clients, off the callers' path), and a warning when the reports that
// open the fleet waited longer than a replica's calls: the lockstep
// figure then measures the machine, not the protocol.
//
// It needs a redis-server: -redis host:port uses a running one; by default
// it starts its own on a free port when redis-server is installed
// (Debian: apt-get install -y --no-install-recommends redis-server).
//
//	cd examples && go run ./fleet
//	cd examples && go run ./fleet -json
//	cd examples && go run ./fleet -quota 200   # also the fleet-wide rate limit, over 10s
//	cd examples && go run ./fleet -debug :8080 -outage 30s   # the live page at /debug/rampart
//
// With -debug, the shared run's replicas are registered on a live page
// (package inspect, at /debug/rampart): one row per replica, the fleet's
// record read from Redis next to the replica's breaker, and whether they
// agree.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rampart-go/rampart/inspect"
)

type options struct {
	replicas  int
	healthy   time.Duration // before the outage
	outage    time.Duration
	after     time.Duration // after the outage
	interval  time.Duration // between the calls of one replica's caller
	callers   int           // concurrent callers per replica
	latency   time.Duration // the backend's time per request
	cooldown  time.Duration
	failures  int
	maxProbes int
	redis     string
	// redisTimeout bounds each Redis command (rampartredis.Config.Timeout
	// and the client's dial, read and write timeouts): past it a replica
	// fails safe and decides alone.
	redisTimeout time.Duration
	jsonOut      bool
	// debug is the address of the live page (package inspect) of the
	// shared run's replicas; empty for none. registry is its Registry.
	debug    string
	registry *inspect.Registry
	quota    float64       // calls per second; 0 skips the rate limit run
	quotaFor time.Duration // how long the rate limit run lasts
}

func defaults() options {
	return options{
		// healthy is not a multiple of half the default Refresh (the
		// replicas, started together, read the record every 500ms or so):
		// a real outage does not start as every replica reads, and those
		// reads at the outage's first milliseconds would queue in Redis
		// with the failure reports that open the fleet.
		replicas: 8, healthy: 750 * time.Millisecond, outage: 4 * time.Second, after: time.Second,
		interval: 5 * time.Millisecond, callers: 1, cooldown: 100 * time.Millisecond, failures: 5, maxProbes: 1,
		redisTimeout: 200 * time.Millisecond,
		quotaFor:     10 * time.Second,
	}
}

func main() {
	o := defaults()
	flag.IntVar(&o.replicas, "replicas", o.replicas, "replicas, each with its own client, breaker and Redis connection")
	flag.DurationVar(&o.healthy, "healthy", o.healthy, "how long the backend serves before the outage")
	flag.DurationVar(&o.outage, "outage", o.outage, "how long the backend fails every request")
	flag.DurationVar(&o.after, "after", o.after, "how long the run goes on after the outage")
	flag.DurationVar(&o.interval, "interval", o.interval, "time between the calls of one caller")
	flag.IntVar(&o.callers, "callers", o.callers, "callers per replica, each making one call at a time")
	flag.DurationVar(&o.latency, "latency", o.latency, "the backend's time per request (lets probes overlap)")
	flag.DurationVar(&o.cooldown, "cooldown", o.cooldown, "the breakers' cool-down")
	flag.IntVar(&o.failures, "failures", o.failures, "consecutive failures that trip a breaker")
	flag.IntVar(&o.maxProbes, "max-probes", o.maxProbes, "probes a HalfOpen breaker admits")
	flag.DurationVar(&o.redisTimeout, "redis-timeout", o.redisTimeout, "bound on each Redis command; past it a replica fails safe and decides alone")
	flag.StringVar(&o.redis, "redis", "", "address of a running Redis (host:port); empty starts a redis-server")
	flag.Float64Var(&o.quota, "quota", 0, "also run a fleet-wide rate limit of this many calls per second (rampartredis.Quota) with every replica wanting more; 0 skips it")
	flag.DurationVar(&o.quotaFor, "quota-for", o.quotaFor, "how long the rate limit run lasts")
	flag.BoolVar(&o.jsonOut, "json", false, "print the results as one JSON object instead of the table")
	flag.StringVar(&o.debug, "debug", "", "serve the live page of the shared run's replicas at this address (such as :8080) on /debug/rampart; empty for none")
	flag.Parse()
	if o.debug != "" {
		o.registry = new(inspect.Registry)
		ln, err := net.Listen("tcp", o.debug)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleet: -debug:", err)
			os.Exit(1)
		}
		mux := http.NewServeMux()
		mux.Handle("/debug/rampart", o.registry)
		srv := &http.Server{Handler: mux}
		go srv.Serve(ln) //nolint:errcheck // ends when the program does
		fmt.Fprintf(os.Stderr, "live page on http://%s/debug/rampart\n", ln.Addr())
	}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// report is the program's output: one result per mode.
type report struct {
	Replicas  int    `json:"replicas"`
	Callers   int    `json:"callers"`
	MaxProbes int    `json:"max_probes"`
	Outage    string `json:"outage"`
	// IntervalMS is the time between the calls of one caller.
	IntervalMS float64 `json:"interval_ms"`
	// Starved is true when Redis answered the lockstep's reports slower,
	// at the median, than a replica calls: the lockstep figure then
	// measures the machine, not the protocol.
	Starved bool `json:"starved"`
	// SlowReports is true when some of those reports (the slowest 1%)
	// took longer than a replica's calls: the figure may include rounds
	// that failed while they waited.
	SlowReports bool   `json:"slow_reports"`
	Independent result `json:"independent"`
	Shared      result `json:"shared"`
	// Quota is the fleet-wide rate limit run, with -quota.
	Quota *quotaResult `json:"quota,omitempty"`
}

func run(o options, w io.Writer) error {
	addr := o.redis
	if addr == "" {
		srv, err := startRedis()
		if err != nil {
			return err
		}
		defer srv.stop()
		addr = srv.addr
	}
	rep := report{Replicas: o.replicas, Callers: o.callers, MaxProbes: o.maxProbes, Outage: o.outage.String(), IntervalMS: msOf(o.interval)}
	var err error
	if rep.Independent, err = simulate(o, ""); err != nil {
		return err
	}
	if rep.Shared, err = simulate(o, addr); err != nil {
		return err
	}
	if l := rep.Shared.LockstepRoundTrip; l != nil {
		rep.Starved, rep.SlowReports = l.MedianMS > rep.IntervalMS, l.P99MS > rep.IntervalMS
	}
	if o.quota > 0 {
		q, err := measureQuota(o, addr)
		if err != nil {
			return err
		}
		rep.Quota = &q
	}
	if o.jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printTable(w, rep)
	return nil
}

func printTable(w io.Writer, r report) {
	fmt.Fprintf(w, "%d replicas of %d caller(s) each, one backend down for %s, MaxProbes %d\n\n", r.Replicas, r.Callers, r.Outage, r.MaxProbes)
	row := func(name string, f func(result) string) {
		fmt.Fprintf(w, "%-42s %14s %14s\n", name, f(r.Independent), f(r.Shared))
	}
	row("", func(x result) string {
		if x.Shared {
			return "shared"
		}
		return "independent"
	})
	row("lockstep: failing calls until all refuse", func(x result) string { return fmt.Sprint(x.UntilAllOpen) })
	row("backend hits during the outage", func(x result) string { return fmt.Sprint(x.OutageHits) })
	row("probes while down (HalfOpen admissions)", func(x result) string { return fmt.Sprint(x.Probes) })
	row("probes per HalfOpen round, fleet-wide", func(x result) string { return fmt.Sprintf("%d..%d", x.MinRoundProbes, x.MaxRoundProbes) })
	row("HalfOpen rounds", func(x result) string { return fmt.Sprint(x.Rounds) })
	row("first trip to every replica open", func(x result) string { return x.AllOpenAfter })
	row("calls the breakers refused", func(x result) string { return fmt.Sprint(x.Rejected) })
	row("Redis commands sent", func(x result) string { return fmt.Sprint(x.RedisCommands) })
	row("Redis commands failed", func(x result) string { return fmt.Sprint(x.RedisFailures) })
	fmt.Fprintf(w, "\nhits with shared state / independent: %.2f\n", float64(r.Shared.OutageHits)/float64(max(r.Independent.OutageHits, 1)))
	printRoundTrips(w, r)
	if q := r.Quota; q != nil {
		fmt.Fprintf(w, "\nfleet-wide rate limit: quota %g/s, %d replicas each wanting more, %gs: admitted %.1f/s (%.1f%% of the quota), %d Redis commands\n",
			q.Quota, r.Replicas, q.Seconds, q.PerSecond, q.PercentOfQ, q.RedisCmds)
	}
}

// printRoundTrips prints how fast Redis answered during the shared run,
// and a warning when it answered the lockstep's failure reports slower
// than the replicas call (at the median: the machine is starved; at the
// 99th percentile: some were): each round of calls made while the
// reports wait fails on every replica, so the lockstep figure then grows
// by about replicas × round trip / interval, whatever the protocol does.
func printRoundTrips(w io.Writer, r report) {
	all, l := r.Shared.RedisRoundTrip, r.Shared.LockstepRoundTrip
	if all == nil {
		return
	}
	fmt.Fprintf(w, "Redis round trip over the shared run: median %.2f ms, p99 %.2f ms (%d commands)\n", all.MedianMS, all.P99MS, all.Commands)
	if l == nil {
		return // a replica never refused: no lockstep, nothing to warn of
	}
	fmt.Fprintf(w, "lockstep: every replica refused %.1f ms into the outage; the reports sent meanwhile took median %.2f ms, p99 %.2f ms (%d commands)\n",
		r.Shared.RefusingAfterMS, l.MedianMS, l.P99MS, l.Commands)
	switch {
	case r.Starved:
		fmt.Fprintf(w, "warning: the machine is starved: the lockstep figure is bounded by Redis's round trip (median %.2f ms, more than the %g ms between a replica's calls), not by the protocol\n",
			l.MedianMS, r.IntervalMS)
	case r.SlowReports:
		fmt.Fprintf(w, "warning: some reports waited for Redis longer than the %g ms between a replica's calls (p99 %.2f ms): the lockstep figure may count rounds that failed meanwhile\n",
			r.IntervalMS, l.P99MS)
	}
}
