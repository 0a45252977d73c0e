package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// stats records every caller request of one client.
type stats struct {
	recovery time.Time
	started  atomic.Int64

	mu                sync.Mutex
	latencies         []time.Duration // guarded by mu; one per finished call
	successes         int             // guarded by mu
	fastFails         int             // guarded by mu; calls rejected by an open breaker
	firstAfterRecover time.Time       // guarded by mu; first success finishing at or after recovery
}

func (s *stats) record(begin, end time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies = append(s.latencies, end.Sub(begin))
	switch {
	case err == nil:
		s.successes++
		if !end.Before(s.recovery) && (s.firstAfterRecover.IsZero() || end.Before(s.firstAfterRecover)) {
			s.firstAfterRecover = end
		}
	case errors.Is(err, circuitbreaker.ErrOpen):
		s.fastFails++
	}
}

// summary is one client's result; its JSON form is the demo's -json output.
type summary struct {
	CallerRequests    int64   `json:"caller_requests"`
	BackendHits       int64   `json:"backend_hits"`
	BackendHitsOutage int64   `json:"backend_hits_outage"`
	SuccessRate       float64 `json:"success_rate"`
	P50ms             float64 `json:"p50_ms"`
	P99ms             float64 `json:"p99_ms"`
	FastFails         int64   `json:"fast_fails"`
	RecoveryMs        float64 `json:"recovery_ms"` // -1 if no success after recovery
	Lost              int64   `json:"lost"`        // calls started but never finished: always 0
}

func (s *stats) summarise(be *backend, recovery time.Time) summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	started := s.started.Load()
	finished := int64(len(s.latencies))
	sum := summary{
		CallerRequests:    started,
		BackendHits:       be.hits.Load(),
		BackendHitsOutage: be.hitsOutage.Load(),
		FastFails:         int64(s.fastFails),
		Lost:              started - finished,
		RecoveryMs:        -1,
	}
	if finished > 0 {
		sum.SuccessRate = float64(s.successes) / float64(finished)
		lat := slices.Clone(s.latencies)
		slices.Sort(lat)
		sum.P50ms = ms(percentile(lat, 0.50))
		sum.P99ms = ms(percentile(lat, 0.99))
	}
	if !s.firstAfterRecover.IsZero() {
		sum.RecoveryMs = ms(s.firstAfterRecover.Sub(recovery))
	}
	return sum
}

// percentile returns the nearest-rank percentile of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(p*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func printTable(w io.Writer, o options, naive, ramp summary) {
	fmt.Fprintf(w, "backend healthy %v, down %v (half 503s, half hanging %v then 503), healthy again %v; %d callers per client, each sending a request every %v\n\n",
		o.healthy, o.outage, o.slow, o.after, o.concurrency, o.interval)
	row := func(name, a, b string) { fmt.Fprintf(w, "%-28s %14s %14s\n", name, a, b) }
	row("", "naive", "rampart")
	row("caller requests", fmt.Sprint(naive.CallerRequests), fmt.Sprint(ramp.CallerRequests))
	row("backend hits", fmt.Sprint(naive.BackendHits), fmt.Sprint(ramp.BackendHits))
	row("backend hits during outage", fmt.Sprint(naive.BackendHitsOutage), fmt.Sprint(ramp.BackendHitsOutage))
	row("caller success rate", fmt.Sprintf("%.1f%%", 100*naive.SuccessRate), fmt.Sprintf("%.1f%%", 100*ramp.SuccessRate))
	row("p50 latency", fmt.Sprintf("%.1f ms", naive.P50ms), fmt.Sprintf("%.1f ms", ramp.P50ms))
	row("p99 latency", fmt.Sprintf("%.1f ms", naive.P99ms), fmt.Sprintf("%.1f ms", ramp.P99ms))
	row("calls failed fast", fmt.Sprint(naive.FastFails), fmt.Sprint(ramp.FastFails))
	row("recovery to first success", recovery(naive.RecoveryMs), recovery(ramp.RecoveryMs))
	row("calls lost", fmt.Sprint(naive.Lost), fmt.Sprint(ramp.Lost))
	if naive.BackendHitsOutage > 0 {
		fmt.Fprintf(w, "\nDuring the outage the rampart client sent the backend %.1f%% of the naive client's load.\n",
			100*float64(ramp.BackendHitsOutage)/float64(naive.BackendHitsOutage))
	}
}

func recovery(msv float64) string {
	if msv < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f ms", msv)
}
