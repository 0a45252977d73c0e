package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
)

var (
	errBoom     = errors.New("boom")
	errNotFound = errors.New("not found")
)

// newBreaker returns a breaker for cfg, failing the test on a config error.
func newBreaker(t testing.TB, cfg circuitbreaker.Config) *circuitbreaker.Breaker {
	t.Helper()
	b, err := circuitbreaker.New(cfg)
	require.NoError(t, err)
	return b
}

// fail records n failures with err, each through its own permit, and
// requires that each was admitted.
func fail(t testing.TB, b *circuitbreaker.Breaker, n int, err error) {
	t.Helper()
	for range n {
		p, aerr := b.TryAcquire()
		require.NoError(t, aerr)
		p.Failure(err)
	}
}

// succeed records n successes, each through its own permit.
func succeed(t testing.TB, b *circuitbreaker.Breaker, n int) {
	t.Helper()
	for range n {
		p, aerr := b.TryAcquire()
		require.NoError(t, aerr)
		p.Success()
	}
}

// openErr returns the *OpenError that TryAcquire returns, failing the test
// if the breaker admits the call.
func openErr(t testing.TB, b *circuitbreaker.Breaker) *circuitbreaker.OpenError {
	t.Helper()
	p, err := b.TryAcquire()
	defer p.Ignore()
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	var oe *circuitbreaker.OpenError
	require.ErrorAs(t, err, &oe)
	return oe
}

// recorder collects transitions; safe for concurrent use.
type recorder struct {
	mu  sync.Mutex
	got []circuitbreaker.Transition
}

func record(b *circuitbreaker.Breaker) *recorder {
	r := &recorder{}
	b.Subscribe(func(t circuitbreaker.Transition) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, t)
	})
	return r
}

// edges returns the transitions as "from>to" strings.
func (r *recorder) edges() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []string{}
	for _, t := range r.got {
		out = append(out, t.From.String()+">"+t.To.String())
	}
	return out
}

func (r *recorder) all() []circuitbreaker.Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]circuitbreaker.Transition(nil), r.got...)
}

// backend is a test service that returns err and counts its calls.
type backend struct {
	calls atomic.Int64
	err   error
}

func (s *backend) Call(ctx context.Context, req string) (string, error) {
	s.calls.Add(1)
	if s.err != nil {
		return "", s.err
	}
	return "ok:" + req, nil
}

func guard(b *circuitbreaker.Breaker, s rampart.Service[string, string]) rampart.Service[string, string] {
	return rampart.NewBuilder[string, string]().Layer(circuitbreaker.NewLayer[string, string](b, nil)).Service(s)
}

// panicOf calls f and returns the value it panicked with and the stack
// seen where that panic was recovered: the stack names the function that
// panicked only if nothing between it and f recovered and re-panicked.
func panicOf(f func()) (value any, stack string) {
	defer func() {
		value = recover()
		stack = string(debug.Stack())
	}()
	f()
	return nil, ""
}

// newFakeClock returns a clock.Fake far from the zero Monotonic, so that
// an origin of zero would show.
func newFakeClock() *clock.Fake {
	return clock.NewFake(time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC), 1000*time.Hour)
}

// reads returns how many readings (Now or Monotonic) c has given.
func reads(c *clock.Fake) int {
	s := c.Stats()
	return s.Now + s.Monotonic
}

// legal lists every transition the contract allows.
var legal = map[[2]circuitbreaker.State]bool{
	{circuitbreaker.Closed, circuitbreaker.Open}:           true, // trip
	{circuitbreaker.Open, circuitbreaker.HalfOpen}:         true, // cool-down over
	{circuitbreaker.HalfOpen, circuitbreaker.Closed}:       true, // probes succeeded, or Reset
	{circuitbreaker.HalfOpen, circuitbreaker.Open}:         true, // a probe failed
	{circuitbreaker.Open, circuitbreaker.Closed}:           true, // Reset
	{circuitbreaker.ForcedOpen, circuitbreaker.Closed}:     true, // Release
	{circuitbreaker.ForcedClosed, circuitbreaker.Closed}:   true, // Release
	{circuitbreaker.ForcedOpen, circuitbreaker.ForcedOpen}: true, // a new reason
}

func init() {
	for _, from := range []circuitbreaker.State{circuitbreaker.Closed, circuitbreaker.Open, circuitbreaker.HalfOpen, circuitbreaker.ForcedOpen, circuitbreaker.ForcedClosed} {
		legal[[2]circuitbreaker.State{from, circuitbreaker.ForcedClosed}] = from != circuitbreaker.ForcedClosed
		if from != circuitbreaker.ForcedOpen {
			legal[[2]circuitbreaker.State{from, circuitbreaker.ForcedOpen}] = true
		}
	}
}

// tally counts what callers got, by the name of the event that must
// report it.
type tally map[string]int

func newTally() tally { return tally{"success": 0, "failure": 0, "ignored": 0, "rejected": 0} }

type cancelKey struct{}

// statusError is a dependency's own error type, for errors.As.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("status %d", e.code) }

// outcomes records a sequence: 'S' success, 'F' failure.
func outcomes(t *testing.T, b *circuitbreaker.Breaker, seq string) {
	t.Helper()
	for _, c := range seq {
		if c == 'S' {
			succeed(t, b, 1)
		} else {
			fail(t, b, 1, errBoom)
		}
	}
}

// timed records one success that took d. It sleeps for d: call it only
// inside synctest.Test, where the sleep is virtual, exact and instant.
func timed(t *testing.T, b *circuitbreaker.Breaker, d time.Duration) {
	t.Helper()
	p, err := b.TryAcquire()
	require.NoError(t, err)
	time.Sleep(d)
	p.Success()
}
