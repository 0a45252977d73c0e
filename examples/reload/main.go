// Command reload changes a live stack's settings from a settings file
// each time the process gets SIGHUP, without a restart and without losing
// state: an Open breaker stays Open until the end of the cool-down it
// opened with, a breaker's window keeps its counts where the new policy
// can use them, a retry budget keeps its balance.
//
//	go run ./examples/reload -settings cmd/rampart-sim/testdata/candidates.toml -candidate "half of 20, 5s"
//	kill -HUP <pid>    # after editing the file
//
// The file is package ramparttoml's settings file: the candidates file
// rampart-sim replays and the outage demo shadows, so a configuration a
// replay found, and a shadow confirmed, is applied as it is. The program
// builds its stack from one candidate (timeout, retry within its budget,
// circuit breaker, concurrency and rate limits) and, on each SIGHUP,
// applies the same candidate again from the file: the timeout, the
// breaker's cool-down, probes and trip rule (circuitbreaker.Breaker.Tune),
// the retries' attempts and backoff (retry.Tuner), the budget's ratio and
// floor (budget.Budget.Tune), the concurrency limit
// (concurrency.Limiter.SetMax) and the rate limit (ratelimit.Tune).
//
// The whole file is read and checked before anything changes: a syntax
// error, an unknown key, a value of the wrong type or out of range, or a
// change that cannot be made while the stack runs (a trip rule of another
// kind, a budget's window, a breaker or limit added or removed) is reported with the
// file and the key, and the old settings stay.
//
// Run without -settings it demonstrates itself: it writes a settings
// file, trips the breaker, rewrites the file twice (once with a mistake),
// signals itself, and prints what happened.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ramparttoml"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/sim"
	"github.com/rampart-go/rampart/timeout"
)

func main() {
	path := flag.String("settings", "", "the settings `file` (TOML) to load at start and on each SIGHUP; empty to run the self-demonstration")
	name := flag.String("candidate", "", "the `name` of the file's candidate to apply; empty for the file's only one")
	flag.Parse()
	if *path == "" {
		if err := demo(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "reload:", err)
			os.Exit(1)
		}
		return
	}
	st, err := start(*path, *name, nil, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reload:", err)
		os.Exit(1)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	fmt.Printf("pid %d: edit %s and send SIGHUP to apply it\n", os.Getpid(), *path)
	for range hup {
		_ = st.apply(*path, os.Stdout)
	}
}

// stack is a running stack built from one candidate, and what changes it:
// retries, breaker, concurrency and rate limits, and the per-attempt
// timeout innermost.
type stack struct {
	name    string // the candidate's
	svc     rampart.Service[string, string]
	timeout atomic.Int64            // the per-attempt timeout; -1 for none
	breaker *circuitbreaker.Breaker // nil without a breaker table
	policy  circuitbreaker.Policy   // the breaker's, for checks
	retries *retry.Tuner            // nil without a retry table
	budget  *budget.Budget          // nil without retries or with no_budget
	window  time.Duration           // the budget's (its default for 0), which cannot change
	limit   *concurrency.Limiter    // nil without a concurrency table
	rate    *rate.Limiter           // nil without a rate_limit table
}

// start loads the candidate name of the file at path and builds its
// stack, around a backend that always succeeds, reporting to obs.
func start(path, name string, obs observe.Observer, w io.Writer) (*stack, error) {
	return startOn(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil }), path, name, obs, w)
}

// startOn is start around the backend dep.
func startOn(dep rampart.Service[string, string], path, name string, obs observe.Observer, w io.Writer) (*stack, error) {
	c, err := load(path, name)
	if err != nil {
		return nil, err
	}
	st := &stack{name: c.Name}
	st.timeout.Store(int64(timeoutOf(c)))
	if c.Breaker != nil {
		cfg := *c.Breaker
		cfg.Name, cfg.Observer = "backend", obs
		if st.breaker, err = circuitbreaker.New(cfg); err != nil {
			return nil, err
		}
		st.policy = cfg.Policy
	}
	b := rampart.NewBuilder[string, string]()
	var lerr error // the first error of a layer's constructor
	add := func(l rampart.Layer[string, string], err error) {
		if err != nil && lerr == nil {
			lerr = err
		}
		if l != nil {
			b = b.Layer(l)
		}
	}
	if r := c.Retry; r != nil {
		s, err := settingsOf(r)
		if err != nil {
			return nil, err
		}
		if st.retries, err = retry.NewTuner(s); err != nil {
			return nil, err
		}
		rc := retry.Config[string, string]{Tuner: st.retries, Name: "backend", Observer: obs}
		switch {
		case r.NoBudget:
			rc.Budget = budget.Always
		default:
			bc := budget.Config{Name: "backend", Observer: obs}
			if r.Budget != nil {
				bc.Window, bc.MinPerSecond, bc.Ratio = r.Budget.Window, r.Budget.MinPerSecond, r.Budget.Ratio
			}
			if st.budget, err = budget.New(bc); err != nil {
				return nil, err
			}
			st.window, rc.Budget = cmp.Or(bc.Window, budget.DefaultWindow), st.budget
		}
		add(retry.NewLayer(rc))
	}
	if st.breaker != nil {
		add(circuitbreaker.NewLayer[string, string](st.breaker, nil), nil)
	}
	if c.Concurrency != 0 {
		if st.limit, err = concurrency.New(c.Concurrency); err != nil {
			return nil, err
		}
		add(concurrency.NewLayer[string, string](concurrency.Config{Limiter: st.limit, Mode: concurrency.Refuse, Name: "backend", Observer: obs}))
	}
	if t := c.RateLimit; t != nil {
		st.rate = rate.NewLimiter(t.Limit, t.Burst)
		add(ratelimit.NewLayer[string, string](ratelimit.Config{Limiter: st.rate, Mode: ratelimit.Refuse, Name: "backend", Observer: obs}))
	}
	// The timeout is per attempt, innermost, as a replay of the same
	// candidate has it: inside the breaker, so a slow attempt is a
	// failure it counts, and inside the retries, so each attempt has its
	// own.
	add(timeout.NewLayer(timeout.Config[string, string]{For: func(string) time.Duration { return time.Duration(st.timeout.Load()) }}))
	if lerr != nil {
		return nil, lerr
	}
	st.svc = b.Service(dep)
	fmt.Fprintf(w, "started with %s\n", describe(filepath.Base(path), c))
	return st, nil
}

// load reads and checks the whole file and returns the candidate name.
// Errors name the file by its base name.
func load(path, name string) (ramparttoml.Candidate, error) {
	f, err := ramparttoml.Load(path)
	if err != nil {
		return ramparttoml.Candidate{}, errors.New(trimDir(path, err))
	}
	c, err := f.Candidate(name)
	if err != nil {
		return ramparttoml.Candidate{}, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return c, nil
}

// trimDir returns err's message with path's directory trimmed.
func trimDir(path string, err error) string {
	msg := err.Error()
	if dir := filepath.Dir(path) + "/"; len(msg) > len(dir) && msg[:len(dir)] == dir {
		return msg[len(dir):]
	}
	return msg
}

// timeoutOf is the candidate's timeout as the timeout layer's For returns
// it: -1 for none.
func timeoutOf(c ramparttoml.Candidate) time.Duration {
	if c.Timeout == 0 {
		return -1
	}
	return c.Timeout
}

// settingsOf returns a retry table's attempts and backoff.
func settingsOf(r *sim.Retry) (retry.Settings, error) {
	bo, err := retry.NewExponential(r.Backoff)
	if err != nil {
		return retry.Settings{}, err
	}
	return retry.Settings{MaxAttempts: r.MaxAttempts, Backoff: bo}, nil
}

// apply loads the stack's candidate from path again and applies it, or
// reports why it keeps the old settings; it writes what it did to w.
// Everything that could fail is checked before anything changes.
func (st *stack) apply(path string, w io.Writer) error {
	err := st.try(path, w)
	if err != nil {
		fmt.Fprintf(w, "kept the old settings: %v\n", err)
	}
	return err
}

func (st *stack) try(path string, w io.Writer) error {
	base := filepath.Base(path)
	c, err := load(path, st.name)
	if err != nil {
		return err
	}
	// Check every change first (the breaker's on a scratch copy).
	var tn circuitbreaker.Tuning
	if bc := c.Breaker; bc != nil && st.breaker != nil {
		tn = circuitbreaker.Tuning{CoolDown: bc.CoolDown, MaxCoolDown: bc.MaxCoolDown, CoolDownMultiplier: bc.CoolDownMultiplier,
			MaxProbes: bc.MaxProbes, ProbeLease: bc.ProbeLease, Policy: bc.Policy}
		scratch, err := circuitbreaker.New(circuitbreaker.Config{Policy: st.policy})
		if err != nil {
			return err
		}
		if err := scratch.Tune(tn); err != nil {
			return fmt.Errorf("%s: candidate %q: breaker: %w", base, c.Name, err)
		}
	}
	var rs retry.Settings
	switch r := c.Retry; {
	case (r == nil) != (st.retries == nil):
		return fmt.Errorf("%s: candidate %q: retry: a retry table cannot be added or removed while the stack runs; restart with it", base, c.Name)
	case r != nil:
		if rs, err = settingsOf(r); err != nil {
			return fmt.Errorf("%s: candidate %q: retry: %w", base, c.Name, err)
		}
		window := budget.DefaultWindow
		if r.Budget != nil {
			window = cmp.Or(r.Budget.Window, budget.DefaultWindow)
		}
		if r.NoBudget != (st.budget == nil) || window != st.window {
			return fmt.Errorf("%s: candidate %q: retry.budget: the budget's window and no_budget cannot change while the stack runs; restart with them", base, c.Name)
		}
	}
	if (c.Concurrency != 0) != (st.limit != nil) || (c.RateLimit != nil) != (st.rate != nil) {
		return fmt.Errorf("%s: candidate %q: a concurrency or rate_limit table cannot be added or removed while the stack runs; restart with it", base, c.Name)
	}
	if (c.Breaker != nil) != (st.breaker != nil) {
		return fmt.Errorf("%s: candidate %q: breaker: a breaker table cannot be added or removed while the stack runs; restart with it", base, c.Name)
	}
	// Apply: nothing below fails on values checked above.
	if st.breaker != nil {
		if err := st.breaker.Tune(tn); err != nil {
			return err
		}
	}
	if st.retries != nil {
		if err := st.retries.Tune(rs); err != nil {
			return err
		}
		if st.budget != nil {
			bt := budget.Tuning{}
			if b := c.Retry.Budget; b != nil {
				bt = budget.Tuning{MinPerSecond: b.MinPerSecond, Ratio: b.Ratio}
			}
			if err := st.budget.Tune(bt); err != nil {
				return err
			}
		}
	}
	if st.limit != nil {
		if err := st.limit.SetMax(c.Concurrency); err != nil {
			return err
		}
	}
	if st.rate != nil {
		if err := ratelimit.Tune(st.rate, *c.RateLimit); err != nil {
			return err
		}
	}
	st.timeout.Store(int64(timeoutOf(c)))
	st.policy = tn.Policy
	fmt.Fprintf(w, "applied %s\n", describe(base, c))
	return nil
}

// describe says what a candidate sets, on one line.
func describe(file string, c ramparttoml.Candidate) string {
	s := fmt.Sprintf("%s %q: timeout %v", file, c.Name, c.Timeout)
	if b := c.Breaker; b != nil {
		s += fmt.Sprintf(", cool_down %v, max_probes %d", b.CoolDown, max(b.MaxProbes, 1))
		if b.Policy != nil {
			s += fmt.Sprintf(", %s %+v", reflect.TypeOf(b.Policy).Name(), b.Policy)
		}
	}
	if r := c.Retry; r != nil {
		n := r.MaxAttempts
		if n == 0 {
			n = retry.DefaultMaxAttempts
		}
		s += fmt.Sprintf(", max_attempts %d", n)
	}
	if c.Concurrency != 0 {
		s += fmt.Sprintf(", concurrency %d", c.Concurrency)
	}
	if r := c.RateLimit; r != nil {
		s += fmt.Sprintf(", rate_limit %v/s burst %d", r.Limit, r.Burst)
	}
	return s
}

// demo runs the self-demonstration on real time (a few milliseconds).
func demo(w io.Writer) error {
	dir, err := os.MkdirTemp("", "reload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := dir + "/settings.toml"
	write := func(s string) error { return os.WriteFile(path, []byte(s), 0o600) }
	const head = "[[candidate]]\nname = \"live\"\ntimeout = \"1s\"\n[candidate.retry]\nmax_attempts = 2\n[candidate.concurrency]\nmax = 8\n"
	if err := write(head + "[candidate.breaker]\ncool_down = \"1h\"\n[candidate.breaker.consecutive]\nfailures = 1\n"); err != nil {
		return err
	}
	tuned := 0
	obs := observe.Func(func(_ context.Context, e observe.Event) {
		if e.Kind == observe.Tuned {
			tuned++
		}
	})
	st, err := start(path, "", obs, w)
	if err != nil {
		return err
	}
	p, err := st.breaker.TryAcquire()
	if err != nil {
		return err
	}
	p.Failure(errors.New("down")) // trips: Open for an hour
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for _, settings := range []string{
		head + "[candidate.breaker]\ncool_down = \"2s\"\nmax_probez = 2\n",                                // a mistake: nothing changes
		head + "[candidate.breaker]\ncool_down = \"2s\"\n[candidate.breaker.failure_rate]\nratio = 0.5\n", // another kind of trip rule
		"[[candidate]]\nname = \"live\"\ntimeout = \"500ms\"\n[candidate.retry]\nmax_attempts = 3\n[candidate.concurrency]\nmax = 16\n" +
			"[candidate.breaker]\ncool_down = \"2s\"\nmax_probes = 2\n[candidate.breaker.consecutive]\nfailures = 3\n",
	} {
		if err := write(settings); err != nil {
			return err
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			return err
		}
		<-hup
		_ = st.apply(path, w)
	}
	var oe *circuitbreaker.OpenError
	if _, err := st.breaker.TryAcquire(); errors.As(err, &oe) {
		fmt.Fprintf(w, "still open, for about %v more: the cool-down it opened with\n", oe.RetryAfter().Round(time.Hour))
	}
	fmt.Fprintf(w, "%d changes reported to the observer (breaker, retry, budget, concurrency)\n", tuned)
	return nil
}
