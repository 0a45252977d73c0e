package shadow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/sim"
)

// MaxCandidates is the most candidates a [Shadow] runs.
const MaxCandidates = 8

// Candidate is one breaker configuration to run beside the live one.
type Candidate struct {
	// Name names the candidate in results and events; it must not be
	// empty, and candidates' names must differ. It is the breaker's Name
	// when Breaker.Name is empty.
	Name string
	// Breaker configures the candidate's breaker, as circuitbreaker.New
	// takes it. Its Clock, if nil, is the Shadow's; its Observer, if nil,
	// the Shadow's. Switch must be nil: nothing may force a shadow.
	Breaker circuitbreaker.Config
}

// Config configures a [Shadow].
type Config struct {
	// Candidates are the configurations to run: at least one, at most
	// [MaxCandidates].
	Candidates []Candidate
	// Clock times the candidates' breakers and the results; nil means the
	// system's clock. Give the Shadow the live breaker's clock.
	Clock clock.Clock
	// Observer, if not nil, is told what each candidate does (see the
	// package documentation). It must be safe for concurrent use.
	Observer observe.Observer
	// Live, if not nil, is the live breaker below the layer: [Shadow.Results]
	// then starts with its row, named as it is (or "live"), beside the
	// candidates': the calls it refused (as the layer saw them: errors
	// matching circuitbreaker.ErrOpen), its trips and its time Open.
	Live *circuitbreaker.Breaker
}

// Shadow runs candidate breakers beside a live one; see the package
// documentation. Make one with [New] and put it in a stack with
// [NewLayer]. It is safe for concurrent use. A nil *Shadow has no
// candidates: Results is nil.
type Shadow struct {
	clk    clock.Clock // nil: the system's
	origin time.Time   // for the system's clock
	obs    observe.Observer
	cands  []*candidate
	live   *candidate // nil without Config.Live; only its tallies are used

	calls  atomic.Int64
	first  atomic.Int64 // monotonic ns of the first call, +1 (0: none yet)
	latest atomic.Uint32
}

// candidate is one candidate's breaker and tallies.
type candidate struct {
	name string
	b    *circuitbreaker.Breaker
	// Counted as calls end; a success admitted is counted by difference.
	refused, lost, failed, ignored, unknown atomic.Int64

	mu        sync.Mutex // guards what follows
	trips     int
	open      time.Duration // total time Open, finished periods
	openSince int64         // monotonic ns since the current Open began, or -1
	openWall  time.Time     // the wall time of its transition
}

// Outcomes known, for the latest-known rule.
const (
	knownNone uint32 = iota
	knownSuccess
	knownFailure
)

// New returns a Shadow running cfg's candidates. It returns an error
// naming the candidate and field for a bad candidate (its breaker's
// error, as circuitbreaker.New returns it), and for no candidate, too
// many, or two of one name.
func New(cfg Config) (*Shadow, error) {
	if err := nilvalue.Field("shadow: Config.Clock", cfg.Clock); err != nil {
		return nil, err
	}
	switch n := len(cfg.Candidates); {
	case n == 0:
		return nil, errors.New("shadow: Config.Candidates must hold at least one candidate")
	case n > MaxCandidates:
		return nil, fmt.Errorf("shadow: Config.Candidates must hold at most %d candidates, got %d", MaxCandidates, n)
	}
	s := &Shadow{clk: cfg.Clock, obs: cfg.Observer, origin: time.Now()}
	names := map[string]bool{}
	for i, c := range cfg.Candidates {
		if c.Name == "" || names[c.Name] {
			return nil, fmt.Errorf("shadow: Config.Candidates[%d]: each candidate needs a Name of its own, got %q", i, c.Name)
		}
		names[c.Name] = true
		bc := c.Breaker
		if bc.Switch != nil {
			return nil, fmt.Errorf("shadow: candidate %q: Breaker.Switch must be nil: nothing may force a shadow", c.Name)
		}
		if bc.Name == "" {
			bc.Name = c.Name
		}
		if bc.Clock == nil {
			bc.Clock = cfg.Clock
		}
		if bc.Observer == nil {
			bc.Observer = cfg.Observer
		}
		bc.AsyncListeners = false
		b, err := circuitbreaker.New(bc)
		if err != nil {
			return nil, fmt.Errorf("shadow: candidate %q: %w", c.Name, err)
		}
		cand := &candidate{name: c.Name, b: b, openSince: -1}
		b.Subscribe(func(t circuitbreaker.Transition) { s.transition(cand, t) })
		s.cands = append(s.cands, cand)
	}
	if cfg.Live != nil {
		name := cfg.Live.State().Name
		if name == "" {
			name = "live"
		}
		s.live = &candidate{name: name, b: cfg.Live, openSince: -1}
		if cfg.Live.State().State == circuitbreaker.Open {
			s.live.openSince, s.live.openWall = s.now(), time.Now()
		}
		cfg.Live.Subscribe(func(t circuitbreaker.Transition) { s.transition(s.live, t) })
	}
	return s, nil
}

// now returns the monotonic time in nanoseconds.
func (s *Shadow) now() int64 {
	if s.clk == nil {
		return int64(time.Since(s.origin))
	}
	return int64(s.clk.Monotonic())
}

// transition follows a candidate's state; it runs on the goroutine that
// caused the transition, synchronously. A period Open is measured between
// the times of its transitions, which the breaker takes from its clock
// (the end of a cool-down is its time even when the breaker notices it at
// the next call).
func (s *Shadow) transition(c *candidate, t circuitbreaker.Transition) {
	now := s.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	open := t.To == circuitbreaker.Open
	switch {
	case open && c.openSince < 0:
		c.trips++
		c.openSince, c.openWall = now, t.Time
	case !open && c.openSince >= 0:
		c.open += t.Time.Sub(c.openWall)
		c.openSince = -1
	}
}

// Results returns what each candidate did so far, in the order of the
// candidates (after the live breaker's row, with Config.Live), in the form of a replay's results ([sim.Result]), so
// [sim.WriteTable] prints them as it prints a replay's: Calls, Sent,
// Succeeded, Failed, Refused, LostGoodput (refusals of calls that
// succeeded), Ignored, Unknown, Trips, TimeOpen (an Open period still
// going counted up to now) and Span (from the first call until now). The
// replay's other fields (retries, bursts, latencies, series) are zero:
// a shadow has no retries of its own, and times no calls, to stay cheap.
// While calls are in flight the counts are each exact but may not add up
// (a call counted as refused and not yet as a call). A nil s has no
// results.
func (s *Shadow) Results() []sim.Result {
	if s == nil {
		return nil
	}
	now := s.now()
	calls := int(s.calls.Load())
	var span time.Duration
	if f := s.first.Load(); f != 0 {
		span = time.Duration(now - (f - 1))
	}
	rows := s.cands
	if s.live != nil {
		rows = append([]*candidate{s.live}, s.cands...)
	}
	out := make([]sim.Result, len(rows))
	for i, c := range rows {
		r := sim.Result{Name: c.name, Calls: calls, Span: span, Series: []sim.Point{},
			Refused: int(c.refused.Load()), LostGoodput: int(c.lost.Load()), Failed: int(c.failed.Load()),
			Ignored: int(c.ignored.Load()), Unknown: int(c.unknown.Load())}
		r.Sent = r.Calls - r.Refused
		r.Succeeded = r.Sent - r.Failed - r.Ignored
		c.mu.Lock()
		r.Trips, r.TimeOpen = c.trips, c.open
		if c.openSince >= 0 {
			r.TimeOpen += time.Duration(now - c.openSince)
		}
		c.mu.Unlock()
		out[i] = r
	}
	return out
}

// report tells the observer that c would have refused a call that
// succeeded.
func (s *Shadow) lost(ctx context.Context, c *candidate, refusal error) {
	c.lost.Add(1)
	if s.obs != nil {
		s.obs.Observe(ctx, observe.Event{Source: observe.Shadow, Name: c.name, Kind: observe.Lost, Err: refusal})
	}
}
