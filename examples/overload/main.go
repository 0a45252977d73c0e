// Command overload shows server-side load shedding with ramparthttp.
//
// It runs the same backend three times on 127.0.0.1 and sends it the same
// traffic each time, more than it can serve: first bare, then behind a
// ramparthttp.Handler with a rate limit, load shedding and a fixed
// concurrency limit, then behind the same rate limit and an adaptive
// concurrency limit that is not told the backend's capacity and finds it
// from the requests' latency. The backend works on -capacity requests at once, each taking
// -work; any more wait in line for a slot, as requests wait for a worker
// pool, a connection pool or the CPU. Requests arrive at -offered per
// second, whether or not earlier ones have been answered, and are sent by
// a bounded pool of -concurrency clients; a request that arrives while
// every client is waiting for an answer is not sent.
//
// Bare, the server accepts everything, so a queue builds up until every
// client is stuck in it: each request takes about (clients / capacity) x
// work, and the traffic beyond capacity is lost on the client side, where
// nobody is told anything. Behind rampart, the server takes only what it
// can serve soon (-limit requests, a short line included) and answers the
// rest at once, 429 above the rate limit and 503 when every slot is taken,
// with a Retry-After header; the requests it serves take about
// (limit / capacity) x work, at the same throughput. The adaptive limit
// starts at 1 and moves every -window: up while requests take about as
// long as the fastest window did, down when they take longer because they
// queue in the backend; it refuses with 503 at once when its slots are
// taken. At the end it prints a side-by-side table, or with -json one
// JSON object {"bare": {...}, "rampart": {...}, "adaptive": {...}}. The
// machine's load shows in the numbers: on a busy machine every server
// serves less.
//
//	go run ./examples/overload
//	go run ./examples/overload -duration 2s -offered 500 -concurrency 200 -rate 0 -json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/ratelimit"
)

type options struct {
	duration    time.Duration
	concurrency int
	capacity    int
	limit       int
	work        time.Duration
	offered     float64
	rate        float64
	retryAfter  time.Duration
	timeout     time.Duration
	window      time.Duration
	jsonOut     bool
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 4*time.Second, "how long the clients send requests to each server")
	flag.Float64Var(&o.offered, "offered", 300, "requests arriving per second")
	flag.IntVar(&o.concurrency, "concurrency", 100, "clients, each with one request in flight at most")
	flag.IntVar(&o.capacity, "capacity", 4, "requests the backend works on at once")
	flag.IntVar(&o.limit, "limit", 0, "rampart's concurrency limit (0: twice -capacity, so at most -capacity requests wait in line)")
	flag.DurationVar(&o.work, "work", 20*time.Millisecond, "time the backend spends on one request")
	flag.Float64Var(&o.rate, "rate", 250, "rampart's rate limit in requests per second (0: none)")
	flag.DurationVar(&o.retryAfter, "retry-after", time.Second, "Retry-After for refusals that carry no delay of their own (shedding)")
	flag.DurationVar(&o.timeout, "timeout", 2*time.Second, "client timeout per request")
	flag.DurationVar(&o.window, "window", 100*time.Millisecond, "the adaptive limit's window: it moves once per window")
	flag.BoolVar(&o.jsonOut, "json", false, "print the summary as one JSON object")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "overload:", err)
		os.Exit(2)
	}
	if o.limit == 0 {
		o.limit = 2 * o.capacity
	}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "overload:", err)
		os.Exit(1)
	}
}

func (o options) validate() error {
	switch {
	case o.duration <= 0:
		return fmt.Errorf("-duration must be > 0, got %v", o.duration)
	case o.concurrency < 1 || o.concurrency > 10_000:
		return fmt.Errorf("-concurrency must be between 1 and 10000, got %d", o.concurrency)
	case o.capacity < 1:
		return fmt.Errorf("-capacity must be >= 1, got %d", o.capacity)
	case o.limit < 0:
		return fmt.Errorf("-limit must be >= 0, got %d", o.limit)
	case o.work <= 0:
		return fmt.Errorf("-work must be > 0, got %v", o.work)
	case !(o.offered > 0) || o.offered > 100_000:
		return fmt.Errorf("-offered must be > 0 and at most 100000, got %v", o.offered)
	case !(o.rate >= 0) || o.rate > 1_000_000:
		return fmt.Errorf("-rate must be between 0 and 1000000, got %v", o.rate)
	case o.retryAfter < 0:
		return fmt.Errorf("-retry-after must be >= 0, got %v", o.retryAfter)
	case o.timeout <= 0:
		return fmt.Errorf("-timeout must be > 0, got %v", o.timeout)
	case o.window <= 0:
		return fmt.Errorf("-window must be > 0, got %v", o.window)
	}
	return nil
}

// stack is which server run serves: the backend bare, behind the fixed
// concurrency limit, or behind the adaptive one.
type stack int

const (
	bare stack = iota
	fixed
	adaptive
)

func run(o options, out io.Writer) error {
	var results [3]summary
	var lim *concurrency.AdaptiveLimiter
	for i, st := range []stack{bare, fixed, adaptive} {
		be := &backend{slots: make(chan struct{}, o.capacity), work: o.work}
		h, l, err := handler(be, o, st)
		if err != nil {
			return err
		}
		res, err := load(h, o)
		if err != nil {
			return err
		}
		res.PeakInside = be.peak.Load()
		if l != nil {
			lim = l
			res.FinalLimit = l.Limit()
			res.BaselineMs = ms(l.Baseline())
		}
		results[i] = res
	}
	if o.jsonOut {
		return json.NewEncoder(out).Encode(map[string]summary{"bare": results[0], "rampart": results[1], "adaptive": results[2]})
	}
	printTable(out, o, results, lim)
	return nil
}

// handler returns the backend bare, or behind one of rampart's overload
// stacks, with the adaptive limiter when there is one. Both stacks start
// with the rate limit. The fixed one then sheds when every slot is taken,
// then takes a slot: its limit is a little above the backend's capacity,
// so a short burst waits in a queue of bounded length instead of being
// refused. The adaptive one refuses at once when its slots are taken.
func handler(be *backend, o options, st stack) (http.Handler, *concurrency.AdaptiveLimiter, error) {
	if st == bare {
		return be, nil, nil
	}
	var layers []ramparthttp.ServerLayer
	if o.rate > 0 {
		// A bucket of a tenth of a second's tokens absorbs the jitter of
		// arrivals without letting a real surge through.
		burst := max(1, int(o.rate/10))
		rl, err := ratelimit.NewLayer[ramparthttp.Exchange, struct{}](ratelimit.Config{Limiter: rate.NewLimiter(rate.Limit(o.rate), burst), Mode: ratelimit.Refuse})
		if err != nil {
			return nil, nil, err
		}
		layers = append(layers, rl)
	}
	var alim *concurrency.AdaptiveLimiter
	if st == adaptive {
		// Start at the floor, so that the first windows measure the
		// backend unloaded; the limit climbs from there.
		var err error
		alim, err = concurrency.NewAdaptive(concurrency.AdaptiveConfig{
			MinLimit: 1, InitialLimit: 1, MaxLimit: o.concurrency, Window: o.window,
		})
		if err != nil {
			return nil, nil, err
		}
		slots, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: alim, Mode: concurrency.Refuse})
		if err != nil {
			return nil, nil, err
		}
		layers = append(layers, slots)
	} else {
		lim, err := concurrency.New(o.limit)
		if err != nil {
			return nil, nil, err
		}
		shed, err := loadshed.NewLayer[ramparthttp.Exchange, struct{}](loadshed.Config{Readiness: lim})
		if err != nil {
			return nil, nil, err
		}
		slots, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Wait})
		if err != nil {
			return nil, nil, err
		}
		layers = append(layers, shed, slots)
	}
	h, err := ramparthttp.NewHandler(be, ramparthttp.ServerConfig{Layers: layers, RetryAfter: o.retryAfter})
	return h, alim, err
}

// backend works on at most cap(slots) requests at once, for work each; the
// others wait in line, as requests wait for a worker pool, a database
// connection pool or the CPU.
type backend struct {
	slots  chan struct{}
	work   time.Duration
	inside atomic.Int64 // requests working or waiting for a slot
	peak   atomic.Int64 // most requests ever inside
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := b.inside.Add(1)
	defer b.inside.Add(-1)
	for p := b.peak.Load(); n > p && !b.peak.CompareAndSwap(p, n); p = b.peak.Load() {
	}
	select {
	case b.slots <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	defer func() { <-b.slots }()
	t := time.NewTimer(b.work)
	defer t.Stop()
	select {
	case <-t.C:
		_, _ = io.WriteString(w, "done\n")
	case <-r.Context().Done():
	}
}

// load serves h on 127.0.0.1 and sends it o.offered requests per second
// for o.duration, through o.concurrency clients. It returns when every
// request has been answered and the server has shut down.
func load(h http.Handler, o options) (summary, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return summary{}, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: o.timeout}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	tr := &http.Transport{MaxIdleConnsPerHost: o.concurrency, IdleConnTimeout: o.timeout}
	hc := &http.Client{Transport: tr, Timeout: o.timeout}
	url := "http://" + ln.Addr().String() + "/"

	// Each client takes one request at a time from jobs. A request that
	// arrives while every client is busy is not sent: the clients are
	// bounded, as a real caller's connection pool or worker pool is.
	// idle holds a token per client not busy with a request, so "every
	// client busy" is exact, not a race with clients starting up.
	jobs := make(chan time.Time, o.concurrency)
	idle := make(chan struct{}, o.concurrency)
	tallies := make([]tally, o.concurrency)
	var wg sync.WaitGroup
	for i := range tallies {
		idle <- struct{}{}
		wg.Go(func() {
			for arrived := range jobs {
				tallies[i].send(hc, url, arrived)
				idle <- struct{}{}
			}
		})
	}
	var all tally
	start := time.Now()
	interval := time.Duration(float64(time.Second) / o.offered)
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= o.duration {
			break
		}
		time.Sleep(time.Until(at))
		select {
		case <-idle:
			jobs <- at // never blocks: a client is free
		default:
			all.busy++
		}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)

	tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return summary{}, fmt.Errorf("shutting down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return summary{}, err
	}
	for _, t := range tallies {
		all.add(t)
	}
	return all.summarise(elapsed), nil
}

// tally is what one client saw; each client has its own, merged at the end.
type tally struct {
	busy, sent, ok, unavailable, tooMany, withRetryAfter, other int
	served, refused                                             []time.Duration // latencies
}

// send sends one request that arrived at arrived and records the answer.
// Latency is measured from the arrival, so time spent waiting for a free
// client would count; the dispatcher never makes a request wait for one.
func (t *tally) send(hc *http.Client, url string, arrived time.Time) {
	status, retryAfter, err := get(hc, url)
	latency := time.Since(arrived)
	t.sent++
	switch {
	case err != nil:
		t.other++
	case status == http.StatusOK:
		t.ok++
		t.served = append(t.served, latency)
	case status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests:
		if status == http.StatusServiceUnavailable {
			t.unavailable++
		} else {
			t.tooMany++
		}
		t.refused = append(t.refused, latency)
		if retryAfter > 0 {
			t.withRetryAfter++
		}
	default:
		t.other++
	}
}

// get sends one GET and reads the body; it returns the status and the
// Retry-After header in whole seconds (0 when absent).
func get(hc *http.Client, url string) (status int, retryAfter time.Duration, err error) {
	resp, err := hc.Get(url)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, 0, err
	}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		retryAfter = time.Duration(secs) * time.Second
	}
	return resp.StatusCode, retryAfter, nil
}

func (t *tally) add(u tally) {
	t.busy += u.busy
	t.sent += u.sent
	t.ok += u.ok
	t.unavailable += u.unavailable
	t.tooMany += u.tooMany
	t.withRetryAfter += u.withRetryAfter
	t.other += u.other
	t.served = append(t.served, u.served...)
	t.refused = append(t.refused, u.refused...)
}

// summary is one server's result; its JSON form is the -json output.
type summary struct {
	NotSent        int     `json:"not_sent"` // arrived while every client was busy
	Sent           int     `json:"sent"`
	OK             int     `json:"ok"`
	Unavailable    int     `json:"status_503"`
	TooMany        int     `json:"status_429"`
	WithRetryAfter int     `json:"refused_with_retry_after"`
	Other          int     `json:"other"` // other statuses and transport errors
	ServedP50ms    float64 `json:"served_p50_ms"`
	ServedP99ms    float64 `json:"served_p99_ms"`
	ServedMaxms    float64 `json:"served_max_ms"`
	RefusedP50ms   float64 `json:"refused_p50_ms"`
	Throughput     float64 `json:"ok_per_second"`
	PeakInside     int64   `json:"peak_inside"`           // most requests working or waiting in the backend at once
	FinalLimit     int     `json:"final_limit,omitempty"` // the adaptive limit when the load ended
	BaselineMs     float64 `json:"baseline_ms,omitempty"` // the adaptive limit's unloaded latency
}

func (t *tally) summarise(elapsed time.Duration) summary {
	slices.Sort(t.served)
	slices.Sort(t.refused)
	return summary{
		NotSent:        t.busy,
		Sent:           t.sent,
		OK:             t.ok,
		Unavailable:    t.unavailable,
		TooMany:        t.tooMany,
		WithRetryAfter: t.withRetryAfter,
		Other:          t.other,
		ServedP50ms:    ms(percentile(t.served, 0.50)),
		ServedP99ms:    ms(percentile(t.served, 0.99)),
		ServedMaxms:    ms(percentile(t.served, 1)),
		RefusedP50ms:   ms(percentile(t.refused, 0.50)),
		Throughput:     float64(t.ok) / elapsed.Seconds(),
	}
}

// percentile returns the nearest-rank q-quantile of sorted latencies, or
// -1 when there are none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return -1
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

func ms(d time.Duration) float64 {
	if d < 0 {
		return -1
	}
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

func printTable(out io.Writer, o options, res [3]summary, lim *concurrency.AdaptiveLimiter) {
	fmt.Fprintf(out, "backend: %d at once x %v each (at most %.0f req/s); offered %g req/s by %d clients for %v per server\n",
		o.capacity, o.work, float64(o.capacity)/o.work.Seconds(), o.offered, o.concurrency, o.duration)
	rl := ""
	if o.rate > 0 {
		rl = fmt.Sprintf("rate limit %g/s + ", o.rate)
	}
	fmt.Fprintf(out, "rampart: %sshed + concurrency limit %d, Retry-After %v for shed requests\n", rl, o.limit, o.retryAfter)
	fmt.Fprintf(out, "adaptive: %sadaptive concurrency limit from 1, window %v; at the end limit %d, unloaded latency %v\n\n",
		rl, o.window, lim.Limit(), lim.Baseline())

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(s summary) any) {
		fmt.Fprintf(tw, "%s\t%v\t%v\t%v\t\n", name, f(res[0]), f(res[1]), f(res[2]))
	}
	fmt.Fprintf(tw, "\tbare\trampart\tadaptive\t\n")
	row("not sent: every client busy", func(s summary) any { return s.NotSent })
	row("requests sent", func(s summary) any { return s.Sent })
	row("200 OK", func(s summary) any { return s.OK })
	row("503 Service Unavailable", func(s summary) any { return s.Unavailable })
	row("429 Too Many Requests", func(s summary) any { return s.TooMany })
	row("  refusals with Retry-After", func(s summary) any { return s.WithRetryAfter })
	row("other statuses, errors", func(s summary) any { return s.Other })
	row("served p50", func(s summary) any { return msText(s.ServedP50ms) })
	row("served p99", func(s summary) any { return msText(s.ServedP99ms) })
	row("served max", func(s summary) any { return msText(s.ServedMaxms) })
	row("refused p50", func(s summary) any { return msText(s.RefusedP50ms) })
	row("200s per second", func(s summary) any { return fmt.Sprintf("%.0f", s.Throughput) })
	row("peak requests in backend", func(s summary) any { return s.PeakInside })
	_ = tw.Flush()
}

func msText(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fms", v)
}
