// Command outage shows a retry storm and how rampart prevents it.
//
// It starts two identical net/http backends on 127.0.0.1 that are healthy,
// then down (errors and slow responses), then healthy again, on one shared
// schedule. The same concurrent load drives two clients, one per backend: a
// naive client that retries every failure a fixed number of times, and a
// rampart client (timeout, retry bounded by a retry budget, and a circuit
// breaker, through ramparthttp). At the end it prints a side-by-side table,
// or with -json one JSON object {"naive": {...}, "rampart": {...}}.
//
//	go run ./examples/outage
//	go run ./examples/outage -healthy 2s -outage 5s -after 3s -concurrency 64 -json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

type options struct {
	healthy, outage, after time.Duration
	slow                   time.Duration
	concurrency            int
	interval               time.Duration
	naiveRetries           int
	resetTimeout           time.Duration
	attemptTimeout         time.Duration
	jsonOut                bool
}

func main() {
	var o options
	flag.DurationVar(&o.healthy, "healthy", 3*time.Second, "how long the backend is healthy before the outage")
	flag.DurationVar(&o.outage, "outage", 8*time.Second, "how long the backend is down")
	flag.DurationVar(&o.after, "after", 5*time.Second, "how long the load runs after the backend recovers")
	flag.DurationVar(&o.slow, "slow", 2*time.Second, "how long a slow failure hangs during the outage")
	flag.IntVar(&o.concurrency, "concurrency", 16, "concurrent callers per client")
	flag.DurationVar(&o.interval, "interval", 100*time.Millisecond, "time between one caller's requests (load: concurrency/interval requests per second)")
	flag.IntVar(&o.naiveRetries, "naive-retries", 3, "retries the naive client makes after each failure")
	flag.DurationVar(&o.resetTimeout, "reset-timeout", time.Second, "rampart breaker's reset timeout (cool-down)")
	flag.DurationVar(&o.attemptTimeout, "attempt-timeout", 500*time.Millisecond, "per-attempt timeout of both clients")
	flag.BoolVar(&o.jsonOut, "json", false, "print the summary as one JSON object")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(2)
	}
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(1)
	}
}

func (o options) validate() error {
	switch {
	case o.healthy < 0:
		return fmt.Errorf("-healthy must be >= 0, got %v", o.healthy)
	case o.outage <= 0:
		return fmt.Errorf("-outage must be > 0, got %v", o.outage)
	case o.after <= 0:
		return fmt.Errorf("-after must be > 0, got %v", o.after)
	case o.slow < 0:
		return fmt.Errorf("-slow must be >= 0, got %v", o.slow)
	case o.concurrency < 1:
		return fmt.Errorf("-concurrency must be >= 1, got %d", o.concurrency)
	case o.interval <= 0:
		return fmt.Errorf("-interval must be > 0, got %v", o.interval)
	case o.naiveRetries < 0:
		return fmt.Errorf("-naive-retries must be >= 0, got %d", o.naiveRetries)
	case o.resetTimeout <= 0:
		return fmt.Errorf("-reset-timeout must be > 0, got %v", o.resetTimeout)
	case o.attemptTimeout <= 0:
		return fmt.Errorf("-attempt-timeout must be > 0, got %v", o.attemptTimeout)
	}
	return nil
}

// client is what the load generator drives: one caller request, which may
// make several backend attempts.
type client interface {
	do(ctx context.Context, url string) error
}

// run runs the demo, printing the summary to out and the phases, as they
// happen, to progress.
func run(o options, out, progress io.Writer) error {
	sched := schedule{start: time.Now(), healthy: o.healthy, outage: o.outage, slowLatency: o.slow}
	clients := []struct {
		name string
		c    client
	}{
		{"naive", newNaive(o)},
		{"rampart", nil}, // set below
	}
	rc, err := newRampart(o)
	if err != nil {
		return err
	}
	clients[1].c = rc

	end := sched.recovery().Add(o.after)
	fmt.Fprintf(progress, "outage demo: %v healthy, %v down, %v healthy again; driving both clients...\n", o.healthy, o.outage, o.after)
	for _, phase := range []struct {
		at  time.Time
		msg string
	}{
		{sched.outageStart(), "backend down"},
		{sched.recovery(), "backend recovered"},
		{end, "load stopped; waiting for calls in flight"},
	} {
		t := time.AfterFunc(time.Until(phase.at), func() {
			fmt.Fprintf(progress, "  %5.1fs  %s\n", time.Since(sched.start).Seconds(), phase.msg)
		})
		defer t.Stop()
	}
	results := make([]summary, len(clients))
	var wg sync.WaitGroup
	for i, cl := range clients {
		be, err := startBackend(sched)
		if err != nil {
			return err
		}
		defer be.close()
		wg.Go(func() {
			st := drive(cl.c, be.addr, o, end, sched.recovery())
			results[i] = st.summarise(be, sched.recovery())
		})
	}
	wg.Wait()

	for i, r := range results {
		if r.Lost != 0 {
			return fmt.Errorf("%s client lost %d calls: started %d, finished %d", clients[i].name, r.Lost, r.CallerRequests, r.CallerRequests-r.Lost)
		}
	}
	if o.jsonOut {
		enc := json.NewEncoder(out)
		return enc.Encode(map[string]summary{"naive": results[0], "rampart": results[1]})
	}
	printTable(out, o, results[0], results[1])
	return nil
}

// drive runs o.concurrency callers against url until end. Each caller sends
// a request every o.interval without waiting for the previous one to answer,
// as users keep arriving whether or not the backend keeps up; so both
// clients get the same caller requests, and a slow backend piles up calls in
// flight. drive returns when every call has finished.
func drive(c client, url string, o options, end, recovery time.Time) *stats {
	st := &stats{recovery: recovery}
	var calls sync.WaitGroup
	var callers sync.WaitGroup
	for range o.concurrency {
		callers.Go(func() {
			// The schedule is fixed in advance, so both clients' callers
			// send exactly the same number of requests.
			start := time.Now()
			for i := 0; ; i++ {
				at := start.Add(time.Duration(i) * o.interval)
				if !at.Before(end) {
					return
				}
				time.Sleep(time.Until(at))
				st.started.Add(1)
				calls.Go(func() {
					begin := time.Now()
					err := c.do(context.Background(), url)
					st.record(begin, time.Now(), err)
				})
			}
		})
	}
	callers.Wait()
	calls.Wait()
	return st
}

// naive retries every failure o.naiveRetries times, at once, with a
// per-attempt timeout: the client that turns an outage into a retry storm.
type naive struct {
	hc      *http.Client
	retries int
}

func newNaive(o options) *naive {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	return &naive{hc: &http.Client{Transport: tr, Timeout: o.attemptTimeout}, retries: o.naiveRetries}
}

func (n *naive) do(ctx context.Context, url string) error {
	var err error
	for range n.retries + 1 {
		if err = get(ctx, n.hc, url); err == nil {
			return nil
		}
	}
	return err
}

// get makes one GET and reads the whole body; a non-2xx status is an error.
func get(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return errors.New(resp.Status)
	}
	return nil
}
