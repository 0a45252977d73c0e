package ramparttoml

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/sim"
)

// file is the TOML shape of a settings file.
type file struct {
	Options   options     `toml:"options"`
	Candidate []candidate `toml:"candidate"`
}

type options struct {
	BurstMin   int      `toml:"burst_min"`
	Resolution duration `toml:"resolution"`
	Seed       uint64   `toml:"seed"`
}

type candidate struct {
	Name        string            `toml:"name"`
	Timeout     duration          `toml:"timeout"`
	Breaker     *breaker          `toml:"breaker"`
	Retry       *retries          `toml:"retry"`
	Concurrency *concurrencyLimit `toml:"concurrency"`
	RateLimit   *rateLimit        `toml:"rate_limit"`
}

type concurrencyLimit struct {
	Max int `toml:"max"`
}

type rateLimit struct {
	Limit float64 `toml:"limit"`
	Burst int     `toml:"burst"`
}

type breaker struct {
	CoolDown           coolDown     `toml:"cool_down"`
	MaxCoolDown        duration     `toml:"max_cool_down"`
	CoolDownMultiplier float64      `toml:"cool_down_multiplier"`
	MaxProbes          int          `toml:"max_probes"`
	ProbeLease         duration     `toml:"probe_lease"`
	Consecutive        *consecutive `toml:"consecutive"`
	FailureRate        *failureRate `toml:"failure_rate"`
	SlowCalls          *slowCalls   `toml:"slow_calls"`
	Probes             *probes      `toml:"probes"`
}

type consecutive struct {
	Failures  int `toml:"failures"`
	Successes int `toml:"successes"`
}

type window struct {
	Size     int      `toml:"size"`
	Period   duration `toml:"period"`
	Buckets  int      `toml:"buckets"`
	MinCalls int      `toml:"min_calls"`
}

func (w window) policy() circuitbreaker.Window {
	return circuitbreaker.Window{Size: w.Size, Period: time.Duration(w.Period), Buckets: w.Buckets, MinCalls: w.MinCalls}
}

type failureRate struct {
	Window window  `toml:"window"`
	Ratio  float64 `toml:"ratio"`
}

type slowCalls struct {
	Threshold duration `toml:"threshold"`
	Window    window   `toml:"window"`
	Ratio     float64  `toml:"ratio"`
}

type probes struct {
	Probes int     `toml:"probes"`
	Ratio  float64 `toml:"ratio"`
}

type retries struct {
	MaxAttempts int           `toml:"max_attempts"`
	Base        duration      `toml:"base"`
	Max         duration      `toml:"max"`
	Multiplier  float64       `toml:"multiplier"`
	Jitter      string        `toml:"jitter"`
	NoBudget    bool          `toml:"no_budget"`
	Budget      *budgetConfig `toml:"budget"`
}

type budgetConfig struct {
	Window       duration `toml:"window"`
	MinPerSecond int      `toml:"min_per_second"`
	Ratio        float64  `toml:"ratio"`
}

// duration is a TOML string read by time.ParseDuration.
type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("must be a duration such as 1.5s or 300ms, got %q", b)
	}
	*d = duration(v)
	return nil
}

// coolDown is a breaker's cool-down: a duration, or "immediate" or
// "forever" (circuitbreaker.Immediate, rampart.Forever), words no other
// duration key takes.
type coolDown time.Duration

func (d *coolDown) UnmarshalText(b []byte) error {
	switch string(b) {
	case "immediate":
		*d = coolDown(circuitbreaker.Immediate)
	case "forever":
		*d = coolDown(rampart.Forever)
	default:
		v, err := time.ParseDuration(string(b))
		if err != nil {
			return fmt.Errorf("must be a duration such as 1.5s or 300ms, or immediate or forever, got %q", b)
		}
		*d = coolDown(v)
	}
	return nil
}

var jitters = map[string]retry.Jitter{
	"":             retry.FullJitter,
	"full":         retry.FullJitter,
	"equal":        retry.EqualJitter,
	"decorrelated": retry.DecorrelatedJitter,
	"none":         retry.NoJitter,
}

// Load reads and checks the whole settings file at path: its syntax, its
// keys (an unknown key is an error: misspelt keys are never ignored), and
// every value, as the packages that take them check them (a candidate's
// breaker as circuitbreaker.New does, its replay as sim.Replay does). It
// returns an error naming the file (as path gives it), the line and the
// dotted key at fault, such as
//
//	c.toml:4: candidate.0.breaker.max_probes: circuitbreaker: MaxProbes must be in [0, 1024], got 5000
//
// or an [io/fs] error for a file it cannot read (matching
// [io/fs.ErrNotExist] and the like). Safe for concurrent use.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse is [Load] for the contents data of a file named path (in errors).
// Safe for concurrent use.
func Parse(path string, data []byte) (*File, error) {
	cands, opt, err := parse(path, data)
	if err != nil {
		return nil, err
	}
	return &File{Replay: opt, Candidates: cands}, nil
}

// parse checks a settings file and builds its candidates.
func parse(path string, data []byte) ([]Candidate, sim.Config, error) {
	// The candidates are decoded one by one, so that an error in one
	// names it: toml's errors name a key without the index of its array
	// element, and give the line where the last element sets it.
	var raw struct {
		Options   options          `toml:"options"`
		Candidate []toml.Primitive `toml:"candidate"`
	}
	src := source{path: path, lines: strings.Split(string(data), "\n")}
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return nil, sim.Config{}, src.decodeError(err, -1)
	}
	f := file{Options: raw.Options, Candidate: make([]candidate, len(raw.Candidate))}
	for i, p := range raw.Candidate {
		if err := md.PrimitiveDecode(p, &f.Candidate[i]); err != nil {
			return nil, sim.Config{}, src.decodeError(err, i)
		}
	}
	if u := md.Undecoded(); len(u) > 0 {
		// Undecoded keys carry no index of the array element they are in:
		// report the first line that sets one.
		want := dotted(u[0])
		k, line := src.find(func(k toml.Key) bool { return dotted(unindexed(k)) == want })
		return nil, sim.Config{}, fmt.Errorf("%s:%d: %s: unknown key %q (misspelt?)", path, line, dotted(k), u[0][len(u[0])-1])
	}
	if len(f.Candidate) == 0 {
		return nil, sim.Config{}, fmt.Errorf("%s: no [[candidate]]", path)
	}
	opt := sim.Config{BurstMin: f.Options.BurstMin, Resolution: time.Duration(f.Options.Resolution), Seed: f.Options.Seed}
	if _, err := sim.Replay(empty(), nil, opt); err != nil {
		return nil, opt, src.fieldError(toml.Key{"options"}, err)
	}
	names := map[string]bool{}
	var out []Candidate
	for i, c := range f.Candidate {
		at := toml.Key{"candidate", fmt.Sprint(i)}
		if c.Name == "" || names[c.Name] {
			return nil, opt, src.errorf(at, "each candidate needs a name of its own, got %q", c.Name)
		}
		names[c.Name] = true
		sc, err := c.build()
		if err != nil {
			var se sectionError
			if errors.As(err, &se) {
				return nil, opt, src.fieldError(append(at, se.section...), se.err)
			}
			return nil, opt, src.fieldError(at, err)
		}
		// Let the simulator check the rest now, by replaying an empty
		// trace.
		if _, err := sim.Replay(empty(), []sim.Candidate{sc.Sim()}, opt); err != nil {
			return nil, opt, src.fieldError(at, err)
		}
		out = append(out, sc)
	}
	return out, opt, nil
}

// empty is an empty trace.
func empty() *sim.TraceReader { return sim.NewTraceReader(strings.NewReader(""), "") }

// unindexed drops the array indexes from k.
func unindexed(k toml.Key) toml.Key {
	var out toml.Key
	for _, p := range k {
		if _, err := strconv.Atoi(p); err != nil {
			out = append(out, p)
		}
	}
	return out
}

// sectionError is an error in one section of a candidate.
type sectionError struct {
	section toml.Key
	err     error
}

func (e sectionError) Error() string { return e.err.Error() }

func (c *candidate) build() (Candidate, error) {
	out := Candidate{Name: c.Name, Timeout: time.Duration(c.Timeout)}
	if b := c.Breaker; b != nil {
		cfg := circuitbreaker.Config{
			CoolDown:           time.Duration(b.CoolDown),
			MaxCoolDown:        time.Duration(b.MaxCoolDown),
			CoolDownMultiplier: b.CoolDownMultiplier,
			MaxProbes:          b.MaxProbes,
			ProbeLease:         time.Duration(b.ProbeLease),
		}
		var trips []circuitbreaker.Policy
		if p := b.Consecutive; p != nil {
			trips = append(trips, circuitbreaker.Consecutive{Failures: p.Failures, Successes: p.Successes})
		}
		if p := b.FailureRate; p != nil {
			trips = append(trips, circuitbreaker.FailureRate{Window: p.Window.policy(), Ratio: p.Ratio})
		}
		if p := b.SlowCalls; p != nil {
			trips = append(trips, circuitbreaker.SlowCalls{Threshold: time.Duration(p.Threshold), Window: p.Window.policy(), Ratio: p.Ratio})
		}
		switch len(trips) {
		case 0:
			// What circuitbreaker.New makes of a nil Policy, given as it
			// is: Tuning.Policy nil would keep the running breaker's.
			cfg.Policy = circuitbreaker.Consecutive{}
		case 1:
			cfg.Policy = trips[0]
		default:
			cfg.Policy = circuitbreaker.Any(trips...)
		}
		if p := b.Probes; p != nil {
			cfg.Policy = circuitbreaker.SuccessRate{Trip: cfg.Policy, Probes: p.Probes, Ratio: p.Ratio}
		}
		out.Breaker = &cfg
		if _, err := circuitbreaker.New(cfg); err != nil {
			return out, sectionError{toml.Key{"breaker"}, err}
		}
	}
	if r := c.Retry; r != nil {
		j, ok := jitters[r.Jitter]
		if !ok {
			return out, sectionError{toml.Key{"retry", "jitter"}, fmt.Errorf("must be full, equal, decorrelated or none, got %q", r.Jitter)}
		}
		if r.NoBudget && r.Budget != nil {
			return out, sectionError{toml.Key{"retry", "no_budget"}, errors.New("no_budget = true and a [retry.budget] table exclude each other")}
		}
		out.Retry = &sim.Retry{
			NoBudget:    r.NoBudget,
			MaxAttempts: r.MaxAttempts,
			Backoff:     retry.Exponential{Base: time.Duration(r.Base), Max: time.Duration(r.Max), Multiplier: r.Multiplier, Jitter: j},
		}
		if _, err := retry.NewExponential(out.Retry.Backoff); err != nil {
			return out, sectionError{toml.Key{"retry"}, err}
		}
		if bc := r.Budget; bc != nil {
			cfg := budget.Config{Window: time.Duration(bc.Window), MinPerSecond: bc.MinPerSecond, Ratio: bc.Ratio}
			if _, err := budget.New(cfg); err != nil {
				return out, sectionError{toml.Key{"retry", "budget"}, err}
			}
			out.Retry.Budget = &cfg
		}
	}
	if l := c.Concurrency; l != nil {
		if _, err := concurrency.New(l.Max); err != nil {
			return out, sectionError{toml.Key{"concurrency", "max"}, err}
		}
		out.Concurrency = l.Max
	}
	if l := c.RateLimit; l != nil {
		t := ratelimit.Tuning{Limit: rate.Limit(l.Limit), Burst: l.Burst}
		if err := ratelimit.Tune(rate.NewLimiter(0, 0), t); err != nil {
			return out, sectionError{toml.Key{"rate_limit"}, err}
		}
		out.RateLimit = &t
	}
	return out, nil
}
