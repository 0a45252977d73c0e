package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/sim"
)

// file is a candidates file.
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
	Name    string   `toml:"name"`
	Timeout duration `toml:"timeout"`
	Breaker *breaker `toml:"breaker"`
	Retry   *retries `toml:"retry"`
}

type breaker struct {
	CoolDown           duration     `toml:"cool_down"`
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

// duration is a TOML string read by time.ParseDuration, or "immediate" or
// "forever" (for a breaker's cool-down).
type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	switch s := string(b); s {
	case "immediate":
		*d = duration(circuitbreaker.Immediate)
	case "forever":
		*d = duration(rampart.Forever)
	default:
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("must be a duration such as 1.5s or 300ms (or immediate, forever), got %q", s)
		}
		*d = duration(v)
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

// loadCandidates reads and checks a candidates file. Every error names the
// file, the line and the key at fault.
func loadCandidates(path string) ([]sim.Candidate, sim.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, sim.Config{}, err
	}
	var f file
	md, err := toml.Decode(string(data), &f)
	src := source{path: path, lines: strings.Split(string(data), "\n")}
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			key := ""
			if pe.LastKey != "" {
				key = " " + src.indexed(pe.Position.Line, pe.LastKey) + ":"
			}
			return nil, sim.Config{}, fmt.Errorf("%s:%d:%s %s", path, pe.Position.Line, key, pe.Message)
		}
		if m := typeErrRe.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, sim.Config{}, fmt.Errorf("%s:%d: %s: %s", path, line, src.indexed(line, m[2]), m[3])
		}
		return nil, sim.Config{}, fmt.Errorf("%s: %w", path, err)
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
	var out []sim.Candidate
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
		if _, err := sim.Replay(empty(), []sim.Candidate{sc}, opt); err != nil {
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

func (c *candidate) build() (sim.Candidate, error) {
	out := sim.Candidate{Name: c.Name, Timeout: time.Duration(c.Timeout)}
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
	return out, nil
}

// source finds the lines of keys in a TOML file, for errors.
type source struct {
	path  string
	lines []string
}

// indexed returns key, a dotted key of toml's errors (without the indexes
// of arrays of tables), with its indexes: the key set on line that it
// names. It returns key as it is when no key on line matches.
func (s source) indexed(line int, key string) string {
	out := key
	s.walk(func(k toml.Key, l int) {
		if l == line && dotted(unindexed(k)) == key {
			out = dotted(k)
		}
	})
	return out
}

func (s source) errorf(key toml.Key, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s: %s", s.path, s.line(key), dotted(key), fmt.Sprintf(format, args...))
}

// fieldError reports err, a rampart error naming a Go field, at the
// deepest key under section whose Go name it mentions, or at the section.
func (s source) fieldError(section toml.Key, err error) error {
	msg := err.Error()
	best := section
	for _, k := range s.keysUnder(section) {
		last := k[len(k)-1]
		if len(k) > len(best) && regexp.MustCompile(`\b`+camel(last)+`\b`).MatchString(msg) {
			best = k
		}
	}
	return fmt.Errorf("%s:%d: %s: %s", s.path, s.line(best), dotted(best), msg)
}

// keysUnder lists the keys set under section (candidate indexes as
// numbers), in file order.
func (s source) keysUnder(section toml.Key) []toml.Key {
	var out []toml.Key
	s.walk(func(k toml.Key, _ int) {
		if len(k) > len(section) && strings.HasPrefix(dotted(k)+".", dotted(section)+".") {
			out = append(out, k)
		}
	})
	return out
}

// line returns the line (from 1) where key is set or its table begins,
// or 0.
func (s source) line(key toml.Key) int {
	want := dotted(key)
	_, line := s.find(func(k toml.Key) bool { return dotted(k) == want })
	return line
}

// find returns the first key that match accepts, and its line.
func (s source) find(match func(toml.Key) bool) (toml.Key, int) {
	var found toml.Key
	line := 0
	s.walk(func(k toml.Key, l int) {
		if line == 0 && match(k) {
			found, line = k, l
		}
	})
	return found, line
}

var (
	// typeErrRe matches the errors of BurntSushi/toml that are not a
	// ParseError, such as a value of the wrong type; the key has no array
	// indexes.
	typeErrRe = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]+)"\): (.*)$`)
	tableRe   = regexp.MustCompile(`^\s*(\[\[?)\s*([A-Za-z0-9_.\- ]+?)\s*\]\]?`)
	// keyRe matches a key, dotted or not, and the = after it.
	keyRe = regexp.MustCompile(`^\s*([A-Za-z0-9_\-]+(?:\s*\.\s*[A-Za-z0-9_\-]+)*)\s*=\s*`)
)

// walk calls f with each table and key of the file and its line, in file
// order; the elements of arrays of tables get their index as a key part
// (candidate.1.breaker). Dotted keys (breaker.max_probes = 2) and the keys
// of inline tables (window = {size = 20}) are walked too, each table they
// open before its keys.
func (s source) walk(f func(k toml.Key, line int)) {
	counts := map[string]int{}
	var table toml.Key
	for i, l := range s.lines {
		if m := tableRe.FindStringSubmatch(l); m != nil {
			parts := strings.Split(m[2], ".")
			table = nil
			for j, p := range parts {
				table = append(table, strings.TrimSpace(p))
				// Inside an element of an array of tables, index it.
				if n, ok := counts[dotted(table)]; ok && !(m[1] == "[[" && j == len(parts)-1) {
					table = append(table, fmt.Sprint(n-1))
				}
			}
			if m[1] == "[[" {
				counts[dotted(table)]++
				table = append(table, fmt.Sprint(counts[dotted(table)]-1))
			}
			f(table, i+1)
			continue
		}
		keyValues(l, table, func(k toml.Key) { f(k, i+1) })
	}
}

// keyValues calls f with the key of each key/value pair at the start of
// s, under table, and with the keys of an inline table that is its value,
// recursively; it returns the rest of s after the value.
func keyValues(s string, table toml.Key, f func(toml.Key)) string {
	m := keyRe.FindStringSubmatchIndex(s)
	if m == nil {
		return ""
	}
	key := append(toml.Key{}, table...)
	for _, p := range strings.Split(s[m[2]:m[3]], ".") {
		key = append(key, strings.TrimSpace(p))
		f(key)
	}
	rest := s[m[1]:]
	if !strings.HasPrefix(rest, "{") {
		return skipValue(rest)
	}
	rest = rest[1:]
	for {
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" || rest[0] == '}' {
			return strings.TrimPrefix(rest, "}")
		}
		next := keyValues(rest, key, f)
		if len(next) >= len(rest) {
			return "" // not a key: give up on this line
		}
		rest = next
	}
}

// skipValue returns s after the plain value (string, number, array…) at
// its start: after the first comma or closing brace outside quotes and
// brackets.
func skipValue(s string) string {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if c == '"' && s[j] == '\\' {
					j++
				}
				j++
			}
			i = j
		case '[', '{':
			depth++
		case ']':
			depth--
		case '}':
			if depth == 0 {
				return s[i:]
			}
			depth--
		case ',':
			if depth == 0 {
				return s[i:]
			}
		}
	}
	return ""
}

func dotted(k toml.Key) string { return strings.Join(k, ".") }

// camel turns a TOML key into the Go field name it configures:
// max_probes → MaxProbes.
func camel(s string) string {
	var b strings.Builder
	for _, p := range strings.Split(s, "_") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}
