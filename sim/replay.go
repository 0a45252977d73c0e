package sim

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/retry"
)

// Defaults for the zero fields of [Config].
const (
	// DefaultBurstMin is the number of consecutive recorded failures that
	// make a failure burst.
	DefaultBurstMin = 5
	// DefaultResolution is the first width of a [Point] of the series.
	DefaultResolution = time.Second
	// DefaultMaxPoints bounds the series: when it would grow beyond, the
	// width of a point doubles and neighbours merge.
	DefaultMaxPoints = 1000
)

// Config tunes a replay. Every zero field takes its documented default.
type Config struct {
	// BurstMin is how many consecutive recorded failures make a failure
	// burst, whose detection and recovery delays the result reports.
	// Zero means [DefaultBurstMin]; negative is an error.
	BurstMin int
	// Resolution is the first width of the points of each result's
	// series. Zero means [DefaultResolution]; negative is an error.
	Resolution time.Duration
	// MaxPoints bounds each result's series; when a trace is too long for
	// it, the width of a point doubles and neighbouring points merge, so
	// memory does not grow with the trace. Zero means [DefaultMaxPoints];
	// otherwise it must be at least 2.
	MaxPoints int
	// Seed seeds the retries' jitter, so a replay is reproducible; each
	// candidate draws from its own source seeded with it.
	Seed uint64
}

// Result is what one candidate did with a trace. Durations are in
// nanoseconds in JSON.
type Result struct {
	// Name is the candidate's.
	Name string `json:"name"`
	// Calls is the number of recorded calls replayed.
	Calls int `json:"calls"`
	// Sent is the number of attempts that reached the dependency: first
	// attempts the breaker let through, and retries.
	Sent int `json:"sent"`
	// Succeeded is the number of calls whose caller got a success.
	Succeeded int `json:"succeeded"`
	// Failed is the number of failures that reached callers: recorded
	// failures and timeouts, after any retries. Refusals are not counted.
	Failed int `json:"failed"`
	// Refused is the number of calls the breaker refused (their caller
	// got an error matching circuitbreaker.ErrOpen).
	Refused int `json:"refused"`
	// LostGoodput is the number of refused calls that were recorded as
	// successes: calls the breaker cost.
	LostGoodput int `json:"lost_goodput"`
	// Ignored is the number of calls whose caller got an outcome the
	// breaker counts neither way, as recorded (record.Ignored: a 429, a
	// caller who gave up).
	Ignored int `json:"ignored"`
	// Unknown is the number of calls whose result rests on an outcome the
	// trace does not hold: calls the live breaker refused (record.Refused)
	// that this candidate sent, each given the outcome and duration of
	// the dependency as last recorded (see [Replay]). A candidate whose
	// Unknown is large is judged on guesses, not on the trace.
	Unknown int `json:"unknown"`
	// LatencyP50, LatencyP99 and LatencyMax are the latencies callers
	// felt, over every call (refusals included): from the call's recorded
	// start, when its caller asked, until its caller got the result,
	// retries and their backoff included. They are exact unless the trace
	// holds more than 4096 distinct latencies, and then low by under 1.6%
	// (LatencyMax is always exact); nearest rank: the p50 is the
	// ceil(n/2)-th smallest latency.
	LatencyP50 time.Duration `json:"latency_p50_ns"`
	LatencyP99 time.Duration `json:"latency_p99_ns"`
	LatencyMax time.Duration `json:"latency_max_ns"`
	// LatencyMeasured reports whether the latencies were measured: true
	// for a replay of at least one call, whose latencies may all be 0 (a
	// candidate that refused every call at once); false for a replay of
	// no call and for a shadow's results, which time no calls.
	LatencyMeasured bool `json:"latency_measured"`
	// RetriesSent is the number of retries sent to the dependency.
	RetriesSent int `json:"retries_sent"`
	// RetriesRefusedByBudget is the number of calls whose retries stopped
	// because the retry budget was empty.
	RetriesRefusedByBudget int `json:"retries_refused_by_budget"`
	// Trips is the number of transitions to Open.
	Trips int `json:"trips"`
	// TimeOpen is the total time the breaker spent Open (not HalfOpen).
	TimeOpen time.Duration `json:"time_open_ns"`
	// Bursts is the number of failure bursts in the trace as the
	// candidate sees it: runs of at least Config.BurstMin consecutive
	// calls that failed, recorded as failures or taking at least the
	// candidate's Timeout (which turns them into failures). Detected is
	// how many of them the breaker opened during (or was already open at
	// their start), and Recovered how many of those the breaker closed
	// after, so that traffic flowed again.
	Bursts    int `json:"bursts"`
	Detected  int `json:"detected"`
	Recovered int `json:"recovered"`
	// DetectMean and DetectMax are the delays from the start of a
	// detected burst (its first failure's start) until the breaker
	// opened.
	DetectMean time.Duration `json:"detect_mean_ns"`
	DetectMax  time.Duration `json:"detect_max_ns"`
	// RecoverMean and RecoverMax are the delays from the end of a
	// recovered burst (the start of the first call after it that neither
	// failed nor timed out) until the breaker was Closed again and traffic
	// flowed; zero when Recovered is.
	RecoverMean time.Duration `json:"recover_mean_ns"`
	RecoverMax  time.Duration `json:"recover_max_ns"`
	// Span is the time from the first recorded call's start to the end of
	// the last call.
	Span time.Duration `json:"span_ns"`
	// Resolution is the width of each point of Series.
	Resolution time.Duration `json:"resolution_ns"`
	// Series is the replay over time, one point per Resolution from the
	// first recorded call's start.
	Series []Point `json:"series"`
}

// Point is one stretch of a [Result]'s series.
type Point struct {
	// Succeeded, Failed and Refused count the calls that started in the
	// stretch by what their caller got; Sent counts attempts sent.
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Refused   int `json:"refused"`
	Sent      int `json:"sent"`
	// Open and HalfOpen are how long the breaker was in each state during
	// the stretch.
	Open     time.Duration `json:"open_ns"`
	HalfOpen time.Duration `json:"half_open_ns"`
}

// call is one recorded call being replayed: the request of the simulated
// stack.
type call struct {
	entry    record.Entry
	attempts int
	// unknown is set when the entry's outcome is unknown (the live
	// breaker refused it) and an attempt was sent: the result rests on
	// the rule of Replay.
	unknown bool
}

// run is the replay of a trace through one candidate.
type run struct {
	s      *scheduler
	st     stack
	res    Result
	series series
	// latest is the latest recorded entry with a known outcome (success
	// or failure), and seen whether there is one.
	latest record.Entry
	seen   bool
	lat    latencies

	// The breaker's current state and since when (virtual time).
	state      circuitbreaker.State
	stateSince time.Duration

	bursts bursts
	end    time.Duration // when the latest call returned
}

// Replay replays the trace tr through each candidate on virtual time and
// returns one result per candidate, in order. The trace is read once,
// streaming, in order of start (see [TraceReader]): memory holds the calls
// in flight, the reader's reorder window and the series, whatever the
// trace's length.
//
// Each recorded call starts at its recorded time (relative to the first)
// and goes through the candidate's real rampart layers; a call the
// breaker refuses is not sent; an attempt that is sent takes the recorded
// duration on the virtual clock and ends with the recorded outcome (or
// earlier, when the candidate's timeout cancels it). A retry takes the
// duration and outcome of the latest call recorded at or before its
// start: the dependency as it was then. Keys are not used: one breaker
// serves the whole trace.
//
// What a trace cannot know follows one rule. An entry recorded as a retry
// (Attempt above 1) is not a caller's request: it is not replayed as a
// call (the candidate's own retry layer decides whether to retry), but its
// outcome, when known, is the dependency as it was at its start. An entry
// the live breaker refused (record.Refused) is a caller's request whose
// outcome is unknown, since it never reached the dependency: it is
// replayed as a call and, when the candidate sends it, takes the
// duration and outcome of the latest entry with a known outcome (success
// or failure) recorded at or before its start, or fails at once when
// there is none; [Result.Unknown] counts these calls, and a refusal of one
// is not lost goodput. An ignored entry (record.Ignored) ends with an
// error that the candidate's breaker counts neither way, and its caller's
// result is counted as Ignored.
//
// It returns an error naming the candidate and field for a bad candidate,
// the [*TraceError] of a bad trace line, and any error reading the trace;
// a nil tr is an error.
//
// The calls under replay run on goroutines of the simulator. When a
// candidate's code panics in one (a policy, IsFailure, an Observer),
// Replay sends no further call, lets the calls in flight end, and
// panics on its caller's goroutine with a [*rampart.PanicError] holding
// the value and the stack where it happened; a call that exits its
// goroutine with runtime.Goexit exits the caller's goroutine the same way.
func Replay(tr *TraceReader, cands []Candidate, opt Config) ([]Result, error) {
	if tr == nil {
		return nil, errors.New("sim: Replay: nil *TraceReader (make one with sim.NewTraceReader)")
	}
	if err := opt.fill(); err != nil {
		return nil, err
	}
	first, err := tr.Next()
	empty := errors.Is(err, io.EOF)
	if err != nil && !empty {
		return nil, err
	}
	runs := make([]*run, len(cands))
	for i := range cands {
		r, err := newRun(&cands[i], first.Start, opt)
		if err != nil {
			return nil, err
		}
		runs[i] = r
	}
	for e := first; !empty; {
		at := e.Start.Sub(first.Start)
		for _, r := range runs {
			r.until(at)
			r.start(e, at)
		}
		raise(runs)
		e, err = tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// Let the calls in flight end, so no goroutine is left behind.
			for _, r := range runs {
				r.until(math.MaxInt64)
				r.s.close()
			}
			return nil, err
		}
	}
	for _, r := range runs {
		r.until(math.MaxInt64)
	}
	raise(runs)
	out := make([]Result, len(runs))
	for i, r := range runs {
		out[i] = r.finish()
	}
	return out, nil
}

// raise ends the replay if a call under it panicked or exited its
// goroutine (the first such end, of any run): it lets every run's calls
// in flight end, so that no goroutine is left behind, and raises it on
// the caller's goroutine, a panic as a [*rampart.PanicError] holding the
// value and stack, a runtime.Goexit as one.
func raise(runs []*run) {
	var e *ending
	for _, r := range runs {
		if e = r.s.ended.Load(); e != nil {
			break
		}
	}
	if e == nil {
		return
	}
	for _, r := range runs {
		r.until(math.MaxInt64)
		r.s.close()
	}
	if e.p != nil {
		panic(e.p)
	}
	runtime.Goexit()
}

func (o *Config) fill() error {
	switch {
	case o.BurstMin < 0:
		return fmt.Errorf("sim: BurstMin must be 0 (the default, %d) or positive, got %d", DefaultBurstMin, o.BurstMin)
	case o.Resolution < 0:
		return fmt.Errorf("sim: Resolution must be 0 (the default, %v) or positive, got %v", DefaultResolution, o.Resolution)
	case o.MaxPoints < 0 || o.MaxPoints == 1:
		return fmt.Errorf("sim: MaxPoints must be 0 (the default, %d) or at least 2, got %d", DefaultMaxPoints, o.MaxPoints)
	}
	o.BurstMin = cmp.Or(o.BurstMin, DefaultBurstMin)
	o.Resolution = cmp.Or(o.Resolution, DefaultResolution)
	o.MaxPoints = cmp.Or(o.MaxPoints, DefaultMaxPoints)
	return nil
}

func newRun(c *Candidate, origin time.Time, opt Config) (*run, error) {
	r := &run{s: newScheduler(origin), series: series{width: opt.Resolution, max: opt.MaxPoints}}
	r.res.Name = c.Name
	r.bursts.min, r.bursts.timeout = opt.BurstMin, c.Timeout
	st, err := c.build(r.s, opt.Seed, rampart.ServiceFunc[*call, struct{}](r.dependency))
	if err != nil {
		return nil, err
	}
	r.st = st
	if st.breaker != nil {
		st.breaker.Subscribe(r.transition)
	}
	return r, nil
}

// until runs every event due at or before at, then moves the clock to at.
func (r *run) until(at time.Duration) {
	for {
		if r.s.wakeCanceled() {
			continue
		}
		t, ok := r.s.next()
		if !ok || t > at {
			break
		}
		r.s.fire()
	}
	if at != math.MaxInt64 {
		r.s.advance(at)
	}
}

// start starts the recorded call e at time at, and returns once it has
// returned or blocks on the clock.
func (r *run) start(e record.Entry, at time.Duration) {
	known := e.Outcome == record.Success || e.Outcome == record.Failure
	if known {
		r.latest, r.seen = e, true
	}
	if e.Retry() {
		return // the dependency as seen by a retry: not a caller's request
	}
	r.res.Calls++
	switch {
	case e.Outcome == record.Refused:
		r.bursts.observe(r.guess(), at, r)
	case e.Outcome != record.Ignored:
		r.bursts.observe(e, at, r)
	}
	r.s.start(func() {
		c := &call{entry: e}
		_, err := r.st.svc.Call(ctxBackground, c)
		r.outcome(c, err, at)
	})
}

// guess returns what an attempt of an entry with an unknown outcome
// meets: the latest entry with a known outcome, or an instant failure
// when there is none.
func (r *run) guess() record.Entry {
	if r.seen {
		return r.latest
	}
	return record.Entry{Outcome: record.Failure, Class: "unknown"}
}

// outcome counts what the caller of c got.
func (r *run) outcome(c *call, err error, at time.Duration) {
	now := r.s.Monotonic()
	r.end = max(r.end, now)
	r.lat.add(now - at)
	if c.unknown {
		r.res.Unknown++
	}
	p := r.series.at(at)
	var ig *errIgnored
	switch {
	case err == nil:
		r.res.Succeeded++
		p.Succeeded++
	case errors.Is(err, circuitbreaker.ErrOpen):
		r.res.Refused++
		p.Refused++
		if c.entry.Outcome == record.Success {
			r.res.LostGoodput++
		}
	case errors.As(err, &ig):
		r.res.Ignored++
	default:
		r.res.Failed++
		p.Failed++
	}
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) && errors.Is(ex.Reason, retry.ErrBudgetExhausted) {
		r.res.RetriesRefusedByBudget++
	}
}

// transition follows the breaker's state; it runs on the goroutine that
// caused the transition, while the scheduler waits.
func (r *run) transition(t circuitbreaker.Transition) {
	at := t.Time.Sub(r.s.origin)
	r.leave(at)
	r.state, r.stateSince = t.To, at
	if t.To == circuitbreaker.Open && t.From != circuitbreaker.Open {
		r.res.Trips++
		r.bursts.openedAt(at)
	}
	if t.To == circuitbreaker.Closed {
		r.bursts.closed(at, r)
	}
}

// leave accounts the time spent in the current state up to at.
func (r *run) leave(at time.Duration) {
	d := at - r.stateSince
	if d <= 0 {
		return
	}
	switch r.state {
	case circuitbreaker.Open:
		r.res.TimeOpen += d
		r.series.spread(r.stateSince, at, func(p *Point, d time.Duration) { p.Open += d })
	case circuitbreaker.HalfOpen:
		r.series.spread(r.stateSince, at, func(p *Point, d time.Duration) { p.HalfOpen += d })
	}
}

func (r *run) finish() Result {
	r.s.close()
	end := r.end
	r.leave(end)
	r.stateSince = end
	r.bursts.finish(&r.res)
	r.res.Span = end
	q := r.lat.quantiles(0.5, 0.99)
	r.res.LatencyP50, r.res.LatencyP99, r.res.LatencyMax = q[0], q[1], r.lat.max
	r.res.LatencyMeasured = r.res.Calls > 0
	r.res.Resolution = r.series.width
	r.res.Series = r.series.points
	if r.res.Series == nil {
		r.res.Series = []Point{}
	}
	return r.res
}
