package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/ramparthttp"
)

// config is one run's load, fault and chain.
type config struct {
	rate          float64       // caller requests per second, evenly spaced
	healthy       time.Duration // before the brownout
	fault         time.Duration // the brownout
	after         time.Duration // after it
	slowdown      int           // C's work per request is this many times longer during the brownout
	workers       int           // C's workers
	queue         int           // C's queue
	work          time.Duration // C's work per request
	hopWorkers    int           // A's and B's workers (each holds one while it calls the next hop)
	callerTimeout time.Duration // how long a caller waits before it gives up
	coolDown      time.Duration // rampart breakers' cool-down
	critical      float64       // share of critical requests
	sheddable     float64       // share of sheddable requests
	naiveRetries  int           // retries at every naive hop
}

var defaults = config{
	rate: 200, healthy: 3 * time.Second, fault: 3 * time.Second, after: 6 * time.Second,
	slowdown: 10, workers: 8, queue: 1000, work: 10 * time.Millisecond,
	hopWorkers: 2000, callerTimeout: time.Second, coolDown: time.Second,
	critical: 0.2, sheddable: 0.3, naiveRetries: 3,
}

// network connects the tiers: it serves a handler and returns its URL and
// a RoundTripper to reach it. The program uses real loopback servers; the
// test an in-process transport inside a synctest bubble.
type network interface {
	serve(name string, h http.Handler) (url string, rt http.RoundTripper)
	close()
}

// deadlineHeader carries the caller's deadline (Unix nanoseconds) to every
// hop, in both runs, for the measurement of wasted work only.
const deadlineHeader = "X-Chain-Caller-Deadline"

// tier is a server of finite capacity: a fixed number of workers take
// requests from a bounded queue (a request that finds it full gets a 503
// at once); a worker spends the tier's work on the request, then, for A
// and B, calls the next hop while it holds the worker. A naive worker
// finishes whatever it took, even when its caller has gone; a rampart
// worker drops a request whose context is done and stops working on it
// when it ends.
type tier struct {
	jobs   chan *job
	busy   sync.WaitGroup // jobs queued or being worked on
	work   func() time.Duration
	honour bool
	down   func(ctx context.Context, in *http.Request) (int, bool)
	onWork func(start, end time.Time, in *http.Request) // C only
}

type job struct {
	ctx    context.Context
	r      *http.Request
	status chan [2]int // status, no-retry
}

func newTier(workers, queue int, work func() time.Duration, honour bool) *tier {
	t := &tier{jobs: make(chan *job, queue), work: work, honour: honour}
	for range workers {
		go t.worker()
	}
	return t
}

// stop waits for the work in flight (a naive hop's retries outlive its
// callers) and stops the workers.
func (t *tier) stop() {
	t.busy.Wait()
	close(t.jobs)
}

func (t *tier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j := &job{ctx: r.Context(), r: r, status: make(chan [2]int, 1)}
	t.busy.Add(1)
	select {
	case t.jobs <- j:
	default:
		t.busy.Done()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	select {
	case s := <-j.status:
		if s[1] == 1 {
			w.Header().Set(ramparthttp.NoRetryHeader, "no")
		}
		w.WriteHeader(s[0])
	case <-r.Context().Done():
	}
}

func (t *tier) worker() {
	for j := range t.jobs {
		if t.honour && j.ctx.Err() != nil {
			j.status <- [2]int{http.StatusServiceUnavailable, 0}
			t.busy.Done()
			continue
		}
		start := time.Now()
		d := t.work()
		if t.honour {
			tm := time.NewTimer(d)
			select {
			case <-tm.C:
			case <-j.ctx.Done():
				tm.Stop()
			}
		} else {
			time.Sleep(d)
		}
		if t.onWork != nil {
			t.onWork(start, time.Now(), j.r)
		}
		status, noRetry := http.StatusOK, false
		switch {
		case t.honour && j.ctx.Err() != nil:
			status = http.StatusServiceUnavailable
		case t.down != nil:
			status, noRetry = t.down(j.ctx, j.r)
		}
		nr := 0
		if noRetry {
			nr = 1
		}
		j.status <- [2]int{status, nr}
		t.busy.Done()
	}
}

// call sends one GET to url through rt with ctx and the caller's deadline
// header, and returns the status (503 for a transport error) and whether
// the answer asked for no retry.
func call(ctx context.Context, rt http.RoundTripper, url string, in *http.Request) (int, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return http.StatusInternalServerError, false
	}
	if in != nil {
		req.Header.Set(deadlineHeader, in.Header.Get(deadlineHeader))
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return http.StatusServiceUnavailable, false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(ramparthttp.NoRetryHeader) == "no"
}

// naiveCall is a naive hop's client: no deadline but a 1s timeout per
// attempt (a common default), and up to retries immediate retries of any
// failure.
func naiveCall(rt http.RoundTripper, url string, in *http.Request, retries int, timeout time.Duration) (int, bool) {
	status := http.StatusServiceUnavailable
	for range retries + 1 {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		status, _ = call(ctx, rt, url, in)
		cancel()
		if status < 500 {
			break
		}
	}
	return status, false
}

// chain is the three tiers and the client callers use.
type chain struct {
	callerRT http.RoundTripper
	urlA     string
	tiers    []*tier
	slow     *slowdown
}

// slowdown is C's work per request, longer during the brownout.
type slowdown struct {
	mu     sync.Mutex
	factor int
}

func (s *slowdown) set(f int) { s.mu.Lock(); s.factor = f; s.mu.Unlock() }
func (s *slowdown) get() int  { s.mu.Lock(); defer s.mu.Unlock(); return s.factor }

// overloadClassify judges an attempt for a rampart breaker: a refusal of
// an overloaded server (429, or 503 asking for no retry) is neither a
// success nor a failure, so shedding does not trip the breaker; other
// outcomes as ramparthttp.Classify.
func overloadClassify(resp *http.Response, err error) rampart.Outcome {
	if err == nil && resp != nil && resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(ramparthttp.NoRetryHeader) == "no" {
		return rampart.Ignored
	}
	return ramparthttp.Classify(resp, err)
}

// trustLoopback trusts every peer: here each is one of the chain's own
// tiers on 127.0.0.1.
func trustLoopback(*http.Request) bool { return true }

// build wires callers → A → B → C on net, naive or rampart.
func build(cfg config, net network, rampartRun bool, rec *recorder) (*chain, error) {
	slow := &slowdown{factor: 1}
	workC := func() time.Duration { return cfg.work * time.Duration(slow.get()) }
	hopWork := func() time.Duration { return time.Millisecond }

	c := newTier(cfg.workers, cfg.queue, workC, rampartRun)
	c.onWork = rec.work
	var hC http.Handler = c
	if rampartRun {
		lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: cfg.workers, MaxLimit: 10 * cfg.workers, InitialLimit: cfg.workers, Window: 250 * time.Millisecond})
		if err != nil {
			return nil, err
		}
		limit, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
		if err != nil {
			return nil, err
		}
		prop, err := ramparthttp.PropagatedLayer(ramparthttp.PropagateConfig{Trusted: trustLoopback, MaxTimeout: 2 * cfg.callerTimeout, NoRetry: true})
		if err != nil {
			return nil, err
		}
		h, err := ramparthttp.NewHandler(c, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{prop, limit}})
		if err != nil {
			return nil, err
		}
		hC = h
	}
	urlC, rtC := net.serve("C", rec.countAt("C", hC))

	hop := func(name, downURL string, downRT http.RoundTripper) (string, http.RoundTripper, *tier, error) {
		t := newTier(cfg.hopWorkers, cfg.hopWorkers, hopWork, rampartRun)
		var h http.Handler = t
		if !rampartRun {
			t.down = func(_ context.Context, in *http.Request) (int, bool) {
				return naiveCall(downRT, downURL, in, cfg.naiveRetries, cfg.callerTimeout)
			}
			url, rt := net.serve(name, rec.countAt(name, h))
			return url, rt, t, nil
		}
		br, err := circuitbreaker.New(circuitbreaker.Config{CoolDown: cfg.coolDown})
		if err != nil {
			return "", nil, nil, err
		}
		b, err := budget.New(budget.Config{Ratio: 0.1, MinPerSecond: 1})
		if err != nil {
			return "", nil, nil, err
		}
		rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
			Base:     ramparthttp.Propagate(downRT),
			Retry:    ramparthttp.RetryConfig{MaxAttempts: 3, Budget: b},
			Breaker:  br,
			Classify: overloadClassify,
		})
		if err != nil {
			return "", nil, nil, err
		}
		t.down = func(ctx context.Context, in *http.Request) (int, bool) { return call(ctx, rt, downURL, in) }
		prop, err := ramparthttp.PropagatedLayer(ramparthttp.PropagateConfig{Trusted: trustLoopback, MaxTimeout: 2 * cfg.callerTimeout})
		if err != nil {
			return "", nil, nil, err
		}
		if h, err = ramparthttp.NewHandler(t, ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{prop}}); err != nil {
			return "", nil, nil, err
		}
		url, hrt := net.serve(name, rec.countAt(name, h))
		return url, hrt, t, nil
	}
	urlB, rtB, b, err := hop("B", urlC, rtC)
	if err != nil {
		return nil, err
	}
	urlA, rtA, a, err := hop("A", urlB, rtB)
	if err != nil {
		return nil, err
	}
	return &chain{urlA: urlA, callerRT: rtA, tiers: []*tier{a, b, c}, slow: slow}, nil
}

// criticalityFor picks a request's criticality by cfg's shares, from rng
// (seeded alike in both runs, so both send the same load).
func criticalityFor(cfg config, rng *rand.Rand) rampart.Criticality {
	switch x := rng.Float64(); {
	case x < cfg.critical:
		return rampart.Critical
	case x < cfg.critical+cfg.sheddable:
		return rampart.Sheddable
	}
	return rampart.DefaultCriticality
}

// run sends the load through the chain and returns what the recorder saw.
func run(cfg config, net network, rampartRun bool) (*recorder, error) {
	rec := newRecorder(time.Now(), cfg)
	ch, err := build(cfg, net, rampartRun, rec)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, t := range ch.tiers {
			t.busy.Wait()
		}
		for _, t := range ch.tiers {
			t.stop()
		}
		net.close()
	}()
	var callerRT http.RoundTripper = ch.callerRT
	if rampartRun {
		callerRT = ramparthttp.Propagate(ch.callerRT)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	total := cfg.healthy + cfg.fault + cfg.after
	every := time.Duration(float64(time.Second) / cfg.rate)
	var wg sync.WaitGroup
	start := rec.start
	faultOn, faultOff := start.Add(cfg.healthy), start.Add(cfg.healthy+cfg.fault)
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * every)
		if !at.Before(start.Add(total)) {
			break
		}
		time.Sleep(time.Until(at))
		switch now := time.Now(); {
		case !now.Before(faultOff):
			ch.slow.set(1)
		case !now.Before(faultOn):
			ch.slow.set(cfg.slowdown)
		}
		crit := criticalityFor(cfg, rng)
		sent := time.Now()
		wg.Go(func() { rec.caller(sent, crit, sendOne(cfg, callerRT, ch.urlA, crit, rampartRun)) })
	}
	wg.Wait()
	return rec, nil
}

// sendOne is one caller request: it succeeds with a 200 within the
// caller's timeout. A naive caller retries too, past the point where its
// user gave up; a rampart caller sends once, with its deadline.
func sendOne(cfg config, rt http.RoundTripper, url string, crit rampart.Criticality, rampartRun bool) bool {
	sent := time.Now()
	deadline := sent.Add(cfg.callerTimeout)
	in, _ := http.NewRequest(http.MethodGet, url, nil)
	in.Header.Set(deadlineHeader, strconv.FormatInt(deadline.UnixNano(), 10))
	if !rampartRun {
		status, _ := naiveCall(rt, url, in, cfg.naiveRetries, cfg.callerTimeout)
		return status == http.StatusOK && !time.Now().After(deadline)
	}
	ctx, cancel := context.WithDeadline(rampart.WithCriticality(context.Background(), crit), deadline)
	defer cancel()
	status, _ := call(ctx, rt, url, in)
	return status == http.StatusOK
}

func (c config) String() string {
	return fmt.Sprintf("%.0f req/s, brownout %v..%v at %dx, C %d workers x %v", c.rate, c.healthy, c.healthy+c.fault, c.slowdown, c.workers, c.work)
}
