// Command reload changes a live circuit breaker's settings from a TOML
// file each time the process gets SIGHUP, without a restart and without
// losing the breaker's state: an Open breaker stays Open until the end of
// the cool-down it opened with.
//
//	go run ./examples/reload -settings examples/reload/settings.toml
//	kill -HUP <pid>    # after editing the file
//
// The file holds one [breaker] table with the keys of a candidate's
// [candidate.breaker] table in rampart-sim's candidates file (and of a
// shadow candidate), so a configuration a replay found, and a shadow
// confirmed, is applied as it is:
//
//	[breaker]
//	cool_down = "5s"          # or "immediate", "forever"
//	max_cool_down = "1m"      # a growing cool-down
//	cool_down_multiplier = 2
//	max_probes = 2
//	probe_lease = "10s"
//
// The whole file is read and checked before anything changes: a syntax
// error, an unknown key, a value of the wrong type or out of range is
// reported with the file and the key, and the old settings stay. Only
// the cool-down schedule and the probes change at run time
// (circuitbreaker.Breaker.Tune): a trip rule in the file
// ([breaker.consecutive], [breaker.failure_rate]…) is an error saying so.
//
// Run without -settings it demonstrates itself: it writes a settings
// file, trips the breaker, rewrites the file twice (once with a mistake),
// signals itself, and prints what happened.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
)

func main() {
	path := flag.String("settings", "", "the settings `file` (TOML) to load at start and on each SIGHUP; empty to run the self-demonstration")
	flag.Parse()
	if *path == "" {
		if err := demo(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "reload:", err)
			os.Exit(1)
		}
		return
	}
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "backend"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "reload:", err)
		os.Exit(1)
	}
	if err := apply(br, *path, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "reload:", err)
		os.Exit(1)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	fmt.Printf("pid %d: edit %s and send SIGHUP to apply it\n", os.Getpid(), *path)
	for range hup {
		_ = apply(br, *path, os.Stdout)
	}
}

// file is a settings file.
type file struct {
	Breaker breaker `toml:"breaker"`
}

// breaker holds the keys of rampart-sim's [candidate.breaker] table.
type breaker struct {
	CoolDown           duration       `toml:"cool_down"`
	MaxCoolDown        duration       `toml:"max_cool_down"`
	CoolDownMultiplier float64        `toml:"cool_down_multiplier"`
	MaxProbes          int            `toml:"max_probes"`
	ProbeLease         duration       `toml:"probe_lease"`
	Consecutive        toml.Primitive `toml:"consecutive"`
	FailureRate        toml.Primitive `toml:"failure_rate"`
	SlowCalls          toml.Primitive `toml:"slow_calls"`
	Probes             toml.Primitive `toml:"probes"`
}

// duration is a TOML string read by time.ParseDuration, or "immediate" or
// "forever", as rampart-sim reads it.
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

// load reads and checks the whole settings file at path, and returns the
// tuning it asks for; it changes nothing. Errors name the file by its
// base name and the key.
func load(path string) (circuitbreaker.Tuning, error) {
	var f file
	name := filepath.Base(path)
	md, err := toml.DecodeFile(path, &f)
	if err != nil {
		return circuitbreaker.Tuning{}, fmt.Errorf("%s: %w", name, err)
	}
	for _, rule := range []string{"consecutive", "failure_rate", "slow_calls", "probes"} {
		if md.IsDefined("breaker", rule) {
			return circuitbreaker.Tuning{}, fmt.Errorf("%s: breaker.%s: a trip rule cannot change while the breaker runs; restart with it", name, rule)
		}
	}
	if u := md.Undecoded(); len(u) > 0 {
		return circuitbreaker.Tuning{}, fmt.Errorf("%s: %s: unknown key (misspelt?)", name, u[0])
	}
	t := circuitbreaker.Tuning{
		CoolDown:           time.Duration(f.Breaker.CoolDown),
		MaxCoolDown:        time.Duration(f.Breaker.MaxCoolDown),
		CoolDownMultiplier: f.Breaker.CoolDownMultiplier,
		MaxProbes:          f.Breaker.MaxProbes,
		ProbeLease:         time.Duration(f.Breaker.ProbeLease),
	}
	// Check the values as the breaker would, on a scratch breaker.
	var scratch circuitbreaker.Breaker
	if err := scratch.Tune(t); err != nil {
		return circuitbreaker.Tuning{}, fmt.Errorf("%s: breaker: %w", name, err)
	}
	return t, nil
}

// apply loads path and tunes br with it, or reports why it keeps the old
// settings; it writes what it did to w.
func apply(br *circuitbreaker.Breaker, path string, w io.Writer) error {
	t, err := load(path)
	if err == nil {
		err = br.Tune(t)
	}
	if err != nil {
		fmt.Fprintf(w, "kept the old settings: %v\n", err)
		return err
	}
	fmt.Fprintf(w, "applied %s: cool_down %v, max_probes %d\n", filepath.Base(path), t.CoolDown, max(t.MaxProbes, 1))
	return nil
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
	if err := write("[breaker]\ncool_down = \"1h\"\n"); err != nil {
		return err
	}
	tuned := 0
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "backend", Policy: circuitbreaker.Consecutive{Failures: 1},
		Observer: observe.Func(func(_ context.Context, e observe.Event) {
			if e.Kind == observe.Tuned {
				tuned++
			}
		})})
	if err != nil {
		return err
	}
	if err := apply(br, path, w); err != nil {
		return err
	}
	p, err := br.TryAcquire()
	if err != nil {
		return err
	}
	p.Failure(errors.New("down")) // trips: Open for an hour
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for _, settings := range []string{
		"[breaker]\ncool_down = \"2s\"\nmax_probez = 2\n", // a mistake: nothing changes
		"[breaker]\ncool_down = \"2s\"\nmax_probes = 2\n",
	} {
		if err := write(settings); err != nil {
			return err
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			return err
		}
		<-hup
		_ = apply(br, path, w)
	}
	var oe *circuitbreaker.OpenError
	if _, err := br.TryAcquire(); errors.As(err, &oe) {
		fmt.Fprintf(w, "still open, for about %v more: the cool-down it opened with\n", oe.RetryAfter().Round(time.Hour))
	}
	fmt.Fprintf(w, "%d changes reported to the observer\n", tuned)
	return nil
}
