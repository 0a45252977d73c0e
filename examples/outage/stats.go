package main

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/sim"
)

// callLog records every caller request of one client.
type callLog struct {
	started atomic.Int64

	mu    sync.Mutex
	calls []call // guarded by mu; one per finished call
}

// call is one finished caller request.
type call struct {
	at   time.Duration // when it started, from the start of the run
	late time.Duration // how much later than its schedule it started
	took time.Duration
	ok   bool
	fast bool // rejected by an open breaker
}

// record records a call scheduled at due that started at at, both from
// the start of the run.
func (l *callLog) record(due, at, took time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call{at: at, late: at - due, took: took, ok: err == nil, fast: errors.Is(err, circuitbreaker.ErrOpen)})
}

// result is the demo's outcome; its JSON form is the -json output.
type result struct {
	FaultMs    float64 `json:"fault_ms"`     // how long the fault lasted
	CoolDownMs float64 `json:"cool_down_ms"` // the rampart breaker's cool-down
	Naive      summary `json:"naive"`
	Rampart    summary `json:"rampart"`
	// Shadows is the live breaker's row and the shadows' (with -shadows).
	Shadows []sim.Result `json:"shadows,omitempty"`

	o       options
	shadows []sim.Result
}

// summary is one client's outcome.
type summary struct {
	CallerRequests    int64   `json:"caller_requests"`
	BackendHits       int64   `json:"backend_hits"`        // requests that reached the backend, refused ones included
	BackendHitsOutage int64   `json:"backend_hits_outage"` // of those, how many arrived while the fault lasted
	SuccessRate       float64 `json:"success_rate"`
	Successes         int64   `json:"successes"` // caller requests that succeeded
	Failures          int64   `json:"failures"`  // caller requests that failed, fast or not
	P50ms             float64 `json:"p50_ms"`
	P99ms             float64 `json:"p99_ms"`
	FastFails         int64   `json:"fast_fails"`  // calls failed at once by an open breaker
	RecoveryMs        float64 `json:"recovery_ms"` // from the end of the fault to the first success; -1 if none
	Lost              int64   `json:"lost"`        // calls started but never finished: always 0
	// StartLagP99ms is how late the load generator started the client's
	// calls, at the 99th percentile: a few milliseconds on a machine that
	// keeps up. More means the machine is too busy for the run's
	// latencies to be the backend's alone: the attempt timeouts then fail
	// calls that a healthy backend answered in time.
	StartLagP99ms float64 `json:"start_lag_p99_ms"`

	// OutageMs is how long the callers' outage lasted: from the start of the
	// fault until the success rate over every one-second window of calls
	// from then on is at least 95%; if it never is, from the start of the
	// fault to the end of the load, and OutageOver is false.
	OutageMs   float64 `json:"outage_ms"`
	OutageOver bool    `json:"outage_over"`

	BackendGoodput int64 `json:"backend_goodput"` // successful responses the backend gave to waiting clients
	BackendWasted  int64 `json:"backend_wasted"`  // requests the backend finished after their client gave up

	Timeline timeline `json:"timeline"`

	// Breaker counts the calls of the rampart client's breaker (attempts,
	// not caller requests) by outcome, as its metrics count them; zero for
	// the naive client.
	Breaker breakerCounts `json:"breaker"`

	breaker []span // rampart's breaker states over the run
}

// breakerCounts are a breaker's calls by outcome: the counts of
// rampart.breaker.calls.
type breakerCounts struct {
	Calls      int64 `json:"calls"`
	Successes  int64 `json:"successes"`
	Failures   int64 `json:"failures"`
	FailedFast int64 `json:"failed_fast"`
}

// timeline holds one value per second of the run.
type timeline struct {
	CallerRequests  []int64   `json:"caller_requests"`  // caller requests started
	BackendArrivals []int64   `json:"backend_arrivals"` // requests arriving at the backend: its offered load
	Goodput         []int64   `json:"goodput"`          // see summary.BackendGoodput
	Wasted          []int64   `json:"wasted"`           // see summary.BackendWasted
	SuccessRate     []ratio   `json:"success_rate"`     // of the caller requests started in that second; null if none
	BreakerOpen     []float64 `json:"breaker_open,omitempty"`
}

// ratio is a fraction in [0, 1], or NaN for none, which is null in JSON.
type ratio float64

func (r ratio) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(r)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(r))
}

func (r *ratio) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = ratio(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(r))
}

// span is a time during which a breaker was in one state.
type span struct {
	from, to time.Duration
	state    circuitbreaker.State
}

// busyLag is the start lag (p99) from which a run's machine is busy: its
// calls start later than the schedule by more than the rampart client's
// latency on a quiet machine, and so many of them outlast their 250ms
// attempt timeout that the rampart client's figures are the machine's as
// much as the backend's.
const busyLag = 10 * time.Millisecond

// The outage is over once the callers' success rate over every window of
// outageWindow, sliding by outageStep, is at least outageRate.
const (
	outageWindow = time.Second
	outageStep   = 10 * time.Millisecond
	outageRate   = 0.95
)

// summarise turns one client's calls and its backend's counts into its
// summary; transitions are its breaker's, nil for a client without one.
func summarise(l *callLog, be *backend, transitions []circuitbreaker.Transition, o options) summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := o.model()
	started := l.started.Load()
	calls := l.calls
	s := summary{
		CallerRequests:    started,
		BackendHits:       be.hits.Load(),
		BackendHitsOutage: be.hitsFault.Load(),
		BackendGoodput:    be.goodput.Load(),
		BackendWasted:     be.wasted.Load(),
		Lost:              started - int64(len(calls)),
		RecoveryMs:        -1,
	}
	var ok int
	var recovered time.Duration = -1
	lat := make([]time.Duration, 0, len(calls))
	lag := make([]time.Duration, 0, len(calls))
	for _, c := range calls {
		lat = append(lat, c.took)
		lag = append(lag, c.late)
		if c.fast {
			s.FastFails++
		}
		if !c.ok {
			continue
		}
		ok++
		if end := c.at + c.took; end >= m.faultEnd && (recovered < 0 || end < recovered) {
			recovered = end
		}
	}
	s.Successes, s.Failures = int64(ok), int64(len(calls)-ok)
	if len(calls) > 0 {
		s.SuccessRate = float64(ok) / float64(len(calls))
		slices.Sort(lat)
		s.P50ms = ms(percentile(lat, 0.50))
		s.P99ms = ms(percentile(lat, 0.99))
		slices.Sort(lag)
		s.StartLagP99ms = ms(percentile(lag, 0.99))
	}
	if recovered >= 0 {
		s.RecoveryMs = ms(recovered - m.faultEnd)
	}
	outage, over := outage(calls, m.faultStart, o.total())
	s.OutageMs, s.OutageOver = ms(outage), over

	n := o.seconds()
	s.Timeline = timeline{
		CallerRequests:  make([]int64, n),
		BackendArrivals: be.arrivalsPerSec.values(),
		Goodput:         be.goodputPerSec.values(),
		Wasted:          be.wastedPerSec.values(),
		SuccessRate:     make([]ratio, n),
	}
	okPerSec := make([]int64, n)
	for _, c := range calls {
		if i := int(c.at / time.Second); i < n {
			s.Timeline.CallerRequests[i]++
			if c.ok {
				okPerSec[i]++
			}
		}
	}
	for i, k := range s.Timeline.CallerRequests {
		s.Timeline.SuccessRate[i] = ratio(math.NaN())
		if k > 0 {
			s.Timeline.SuccessRate[i] = ratio(float64(okPerSec[i]) / float64(k))
		}
	}
	if transitions != nil {
		s.breaker = spans(transitions, be.start, o.total())
		s.Timeline.BreakerOpen = openPerSecond(s.breaker, n)
	}
	return s
}

// outage returns how long after faultStart the callers' success rate over
// every one-second window (sliding by 10ms) that starts from then on and
// ends by end is at least 95%, and whether that ever happens before end.
// A window without calls counts as good.
func outage(calls []call, faultStart, end time.Duration) (time.Duration, bool) {
	slots := int((end - faultStart) / outageStep)
	perWin := int(outageWindow / outageStep)
	if slots < perWin {
		return end - faultStart, false
	}
	total := make([]int, slots+1) // prefix sums of calls per slot
	good := make([]int, slots+1)
	for _, c := range calls {
		if c.at < faultStart {
			continue
		}
		if i := int((c.at - faultStart) / outageStep); i < slots {
			total[i+1]++
			if c.ok {
				good[i+1]++
			}
		}
	}
	for i := 1; i <= slots; i++ {
		total[i] += total[i-1]
		good[i] += good[i-1]
	}
	lastBad := -1
	for w := 0; w+perWin <= slots; w++ {
		n, g := total[w+perWin]-total[w], good[w+perWin]-good[w]
		if n > 0 && float64(g) < outageRate*float64(n) {
			lastBad = w
		}
	}
	switch {
	case lastBad < 0:
		return 0, true
	case lastBad+perWin == slots:
		return end - faultStart, false // the last window is bad
	}
	return time.Duration(lastBad+1) * outageStep, true
}

// spans turns a breaker's transitions into the states it was in from start
// for run.
func spans(ts []circuitbreaker.Transition, start time.Time, run time.Duration) []span {
	var out []span
	cur := span{state: circuitbreaker.Closed}
	for _, t := range ts {
		at := min(max(t.Time.Sub(start), cur.from), run)
		cur.to = at
		if cur.to > cur.from {
			out = append(out, cur)
		}
		cur = span{from: at, state: t.To}
	}
	cur.to = run
	if cur.to > cur.from {
		out = append(out, cur)
	}
	return out
}

// openPerSecond returns, for each second, the fraction of it the breaker
// spent not Closed.
func openPerSecond(ss []span, seconds int) []float64 {
	out := make([]float64, seconds)
	for _, s := range ss {
		if s.state == circuitbreaker.Closed {
			continue
		}
		for i := int(s.from / time.Second); i < seconds && time.Duration(i)*time.Second < s.to; i++ {
			lo := max(s.from, time.Duration(i)*time.Second)
			hi := min(s.to, time.Duration(i+1)*time.Second)
			out[i] += float64(hi-lo) / float64(time.Second)
		}
	}
	return out
}

// percentile returns the nearest-rank percentile of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(p*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
