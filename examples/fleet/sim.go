package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
)

// result is what one run measured.
type result struct {
	Shared bool `json:"shared"`
	// OutageHits counts the requests the backend received while down.
	OutageHits int64 `json:"outage_hits"`
	// Rejected counts the calls the breakers refused.
	Rejected int64 `json:"rejected"`
	// Probes counts the calls admitted by a HalfOpen breaker (the permits
	// that are probes), Rounds the HalfOpen rounds across the fleet
	// (probes closer together than half a cool-down are one round: the
	// next round starts a cool-down after the last one's verdict),
	// MinRoundProbes and MaxRoundProbes the fewest and most probes of one
	// round, and MaxRoundReplicas the most replicas that probed in one
	// round.
	Probes           int `json:"probes"`
	Rounds           int `json:"rounds"`
	MinRoundProbes   int `json:"min_round_probes"`
	MaxRoundProbes   int `json:"max_round_probes"`
	MaxRoundReplicas int `json:"max_round_replicas"`
	// UntilAllOpen counts the failing calls the backend received from the
	// start of the outage until every replica was open (refusing): in
	// lockstep, 5 per replica for independent breakers, about one
	// breaker's worth for a fleet that shares failure evidence.
	UntilAllOpen int64 `json:"failing_calls_until_all_open"`
	// AllOpenAfter is the time from the first replica's trip until every
	// replica was open.
	AllOpenAfter   string  `json:"all_open_after"`
	AllOpenAfterMS float64 `json:"all_open_after_ms"`
	// RedisCommands counts the commands the replicas sent to Redis,
	// RedisFailures those that failed (past the Redis timeout a replica
	// decides alone).
	RedisCommands int64 `json:"redis_commands"`
	RedisFailures int64 `json:"redis_failures"`
	// RefusingAfterMS is the time from the start of the outage until every
	// replica refused; -1 if one never did.
	RefusingAfterMS float64 `json:"refusing_after_ms"`
	// RedisRoundTrip is how long Redis took to answer the replicas'
	// commands over the whole run, and LockstepRoundTrip those sent from
	// the start of the outage until every replica refused (the failure
	// reports that open the fleet): timed by a go-redis hook, which runs
	// on rampartredis's background goroutines, never on a call's path.
	// Nil for independent breakers (and LockstepRoundTrip when a replica
	// never refused: there was no lockstep to time).
	RedisRoundTrip    *roundTripStats `json:"redis_round_trip,omitempty"`
	LockstepRoundTrip *roundTripStats `json:"lockstep_round_trip,omitempty"`
}

var errUnavailable = errors.New("backend: 503")

// replica is one process of the fleet.
type replica struct {
	client *http.Client
	br     *circuitbreaker.Breaker
	sh     *rampartredis.Shared
	rc     *redis.Client

	mu       sync.Mutex
	openedAt time.Time // the first Open after the outage began
}

// simulate runs the scenario once: with independent breakers when
// redisAddr is empty, else with state shared through Redis at redisAddr.
func simulate(o options, redisAddr string) (result, error) {
	res := result{Shared: redisAddr != ""}
	var failing atomic.Bool
	var outageHits atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	backend := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(o.latency)
		if failing.Load() {
			outageHits.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})}
	go backend.Serve(ln)
	defer backend.Close()
	url := "http://" + ln.Addr().String() + "/"

	key := fmt.Sprintf("fleet-example-%d", time.Now().UnixNano())
	rs := make([]*replica, o.replicas)
	var rt roundTrips
	var opened atomic.Int32 // replicas open since the outage began
	untilAllOpen := int64(-1)
	var untilMu sync.Mutex
	for i := range rs {
		br, err := circuitbreaker.New(circuitbreaker.Config{
			Name:      "backend",
			Policy:    circuitbreaker.Consecutive{Failures: o.failures},
			CoolDown:  o.cooldown,
			MaxProbes: o.maxProbes,
		})
		if err != nil {
			return res, err
		}
		r := &replica{client: &http.Client{Transport: &http.Transport{}}, br: br}
		br.Subscribe(func(t circuitbreaker.Transition) {
			if t.To == circuitbreaker.Open && failing.Load() {
				r.mu.Lock()
				first := r.openedAt.IsZero()
				if first {
					r.openedAt = time.Now()
				}
				r.mu.Unlock()
				if first && opened.Add(1) == int32(o.replicas) {
					untilMu.Lock()
					untilAllOpen = outageHits.Load()
					untilMu.Unlock()
				}
			}
		})
		if redisAddr != "" {
			r.rc = redis.NewClient(&redis.Options{
				Addr: redisAddr, ContextTimeoutEnabled: true,
				DialTimeout: o.redisTimeout, ReadTimeout: o.redisTimeout, WriteTimeout: o.redisTimeout,
			})
			r.rc.AddHook(&rt)
			// Failures shares failure evidence: the fleet opens once it has
			// seen as many failures as one breaker's threshold.
			r.sh, err = rampartredis.Share(br, r.rc, rampartredis.Config{
				Key: key, ID: fmt.Sprint("replica-", i), Timeout: o.redisTimeout,
				ProbeClaim: max(rampartredis.DefaultProbeClaim, 3*o.redisTimeout),
				Failures:   o.failures, CoolDown: o.cooldown,
			})
			if err != nil {
				return res, err
			}
			if o.registry != nil {
				defer o.registry.AddFleet(br, r.sh)()
			}
		}
		rs[i] = r
	}

	var probesMu sync.Mutex
	var probes []probe
	var rejected atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range o.replicas * o.callers {
		id, r := i%o.replicas, rs[i%o.replicas]
		wg.Go(func() {
			tick := time.NewTicker(o.interval)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				p, err := r.br.TryAcquire()
				if err != nil {
					rejected.Add(1)
					continue
				}
				// The permit says whether it is a probe: a listener's
				// record of the state lags behind (transitions are
				// delivered after the breaker's lock is released), and on a
				// loaded machine the calls admitted Closed just after a
				// round's verdict would count as probes of the round.
				if p.Probe() {
					probesMu.Lock()
					probes = append(probes, probe{at: time.Now(), replica: id})
					probesMu.Unlock()
				}
				p.Done(call(ctx, r.client, url))
			}
		})
	}
	time.Sleep(o.healthy)
	outageAt := time.Now()
	failing.Store(true)
	time.Sleep(o.outage)
	failing.Store(false)
	time.Sleep(o.after)
	cancel()
	wg.Wait()

	res.OutageHits, res.Rejected = outageHits.Load(), rejected.Load()
	untilMu.Lock()
	res.UntilAllOpen = untilAllOpen
	untilMu.Unlock()
	res.Probes = len(probes)
	slices.SortFunc(probes, func(a, b probe) int { return a.at.Compare(b.at) })
	replicas := make(map[int]bool)
	for i, n := 0, 0; i < len(probes); i++ {
		n++
		replicas[probes[i].replica] = true
		if i == len(probes)-1 || probes[i+1].at.Sub(probes[i].at) > o.cooldown/2 {
			res.Rounds++
			if res.MinRoundProbes == 0 || n < res.MinRoundProbes {
				res.MinRoundProbes = n
			}
			res.MaxRoundProbes = max(res.MaxRoundProbes, n)
			res.MaxRoundReplicas = max(res.MaxRoundReplicas, len(replicas))
			n = 0
			clear(replicas)
		}
	}
	var first, last time.Time
	for _, r := range rs {
		r.mu.Lock()
		t := r.openedAt
		r.mu.Unlock()
		if t.IsZero() {
			last = time.Time{}
			break
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	if last.IsZero() {
		res.AllOpenAfter, res.AllOpenAfterMS, res.RefusingAfterMS = "never", -1, -1
	} else {
		d := last.Sub(first)
		res.AllOpenAfter, res.AllOpenAfterMS = d.Round(100*time.Microsecond).String(), float64(d)/float64(time.Millisecond)
		res.RefusingAfterMS = msOf(last.Sub(outageAt))
	}
	if res.Shared {
		all := rt.stats(0, 0)
		res.RedisRoundTrip = &all
		if !last.IsZero() {
			lockstep := rt.stats(outageAt.Sub(epoch), last.Sub(epoch)+1)
			res.LockstepRoundTrip = &lockstep
		}
	}
	for _, r := range rs {
		if r.sh != nil {
			res.RedisCommands += r.sh.Stats().Commands
			res.RedisFailures += r.sh.Stats().Failures
			if err := r.sh.Close(); err != nil {
				return res, err
			}
			r.rc.Close()
		}
		r.client.CloseIdleConnections()
	}
	return res, nil
}

// probe is one call admitted as a probe: when, and by which replica.
type probe struct {
	at      time.Time
	replica int
}

// call makes one request and returns its failure, if any.
func call(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errUnavailable
	}
	return nil
}
