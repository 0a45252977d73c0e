package rampart_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

var errBoom = errors.New("boom")

const ms = time.Millisecond

// step is what the backend does on one call.
type step func(ctx context.Context) (string, error)

// fail returns err at once.
func fail(err error) step {
	return func(context.Context) (string, error) { return "", err }
}

// succeed returns resp at once.
func succeed(resp string) step {
	return func(context.Context) (string, error) { return resp, nil }
}

// hang blocks until ctx is done and returns its error, like a dependency
// that does not answer.
func hang(ctx context.Context) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// failAfter returns err after d, or ctx's error if ctx ends first.
func failAfter(d time.Duration, err error) step {
	return func(ctx context.Context) (string, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return "", err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// tap records when calls pass through it, relative to its creation. As a
// layer it counts the calls that reach the next layer; as a backend it
// plays a script, one step per call, repeating the last step.
type tap struct {
	start  time.Time
	script []step

	mu sync.Mutex
	at []time.Duration // guarded by mu
}

func newTap(script ...step) *tap {
	return &tap{start: time.Now(), script: script}
}

// note records a call and returns its index.
func (p *tap) note() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at = append(p.at, time.Since(p.start))
	return len(p.at) - 1
}

// times returns when each call came, since the tap was made.
func (p *tap) times() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.at...)
}

func (p *tap) calls() int { return len(p.times()) }

// Call plays the script.
func (p *tap) Call(ctx context.Context, _ string) (string, error) {
	i := min(p.note(), len(p.script)-1)
	return p.script[i](ctx)
}

// Wrap makes the tap a layer that notes every call passing through it.
func (p *tap) Wrap(inner rampart.Service[string, string]) rampart.Service[string, string] {
	return rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		p.note()
		return inner.Call(ctx, req)
	})
}

// stack is a composed service with its parts exposed for assertions.
type stack struct {
	svc     rampart.Service[string, string]
	breaker *circuitbreaker.Breaker
	// attempts sees every call the retry loop makes into the breaker
	// layer (stack A), or every call into the breaker (stack B).
	attempts *tap
	backend  *tap
	budget   *budgettest.Budget
}

// stackConfig describes a stack. Zero durations leave a timeout layer out.
type stackConfig struct {
	total, perAttempt time.Duration
	maxAttempts       int
	backoff           time.Duration
	failures          int           // breaker's Consecutive.Failures
	reset             time.Duration // breaker's CoolDown
	budget            retry.Budget  // nil means budget.Always
	// abandon, when set, makes the per-attempt timeout abandon attempts
	// that ignore their context, handing their late results to it.
	abandon func(resp string, err error)
	// breaker, when set, is used instead of a new breaker (failures and
	// reset are then ignored).
	breaker *circuitbreaker.Breaker
}

func (c stackConfig) parts(t *testing.T) (*circuitbreaker.Breaker, rampart.Layer[string, string], *budgettest.Budget) {
	t.Helper()
	br := c.breaker
	if br == nil {
		var err error
		br, err = circuitbreaker.New(circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: c.failures},
			CoolDown: c.reset,
		})
		require.NoError(t, err)
	}
	inner := c.budget
	if inner == nil {
		inner = budget.Always
	}
	bud := budgettest.Over(inner)
	backoff, err := retry.NewConstant(c.backoff)
	require.NoError(t, err)
	rl, err := retry.NewLayer(retry.Config[string, string]{
		MaxAttempts: c.maxAttempts,
		Backoff:     backoff,
		Budget:      bud,
	})
	require.NoError(t, err)
	return br, rl, bud
}

// timeoutLayer returns a timeout layer of d, or nil (skipped by the
// builder) when d is zero. A non-nil late makes it abandon calls.
func timeoutLayer(t *testing.T, d time.Duration, late func(string, error)) rampart.Layer[string, string] {
	t.Helper()
	if d == 0 {
		return nil
	}
	l, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: d, Abandon: late != nil, Late: late})
	require.NoError(t, err)
	return l
}

// stackA builds the recommended order:
// timeout(total) -> retry -> [attempts] -> breaker -> timeout(per attempt) -> backend.
func stackA(t *testing.T, c stackConfig, backend *tap) stack {
	t.Helper()
	br, rl, bud := c.parts(t)
	attempts := newTap()
	svc := rampart.NewBuilder[string, string]().
		Layer(timeoutLayer(t, c.total, nil)).
		Layer(rl).
		Layer(attempts).
		Layer(circuitbreaker.NewLayer[string, string](br, nil)).
		Layer(timeoutLayer(t, c.perAttempt, c.abandon)).
		Service(backend)
	return stack{svc: svc, breaker: br, attempts: attempts, backend: backend, budget: bud}
}

// stackB builds the breaker outside the retry loop:
// [attempts] -> breaker -> retry -> timeout(per attempt) -> backend.
func stackB(t *testing.T, c stackConfig, backend *tap) stack {
	t.Helper()
	br, rl, bud := c.parts(t)
	attempts := newTap()
	svc := rampart.NewBuilder[string, string]().
		Layer(attempts).
		Layer(circuitbreaker.NewLayer[string, string](br, nil)).
		Layer(rl).
		Layer(timeoutLayer(t, c.perAttempt, c.abandon)).
		Service(backend)
	return stack{svc: svc, breaker: br, attempts: attempts, backend: backend, budget: bud}
}

// call calls s and returns its result and how long it took.
func (s stack) call(ctx context.Context) (string, time.Duration, error) {
	start := time.Now()
	resp, err := s.svc.Call(ctx, "req")
	return resp, time.Since(start), err
}

func (s stack) consecutiveFailures() int {
	return s.breaker.State().Counts.ConsecutiveFailures
}

// trip opens s's breaker at once by recording failures directly, so that a
// test starts from a known Open state without spending backend calls.
func (s stack) trip(t *testing.T, failures int) {
	t.Helper()
	for range failures {
		p, err := s.breaker.TryAcquire()
		require.NoError(t, err)
		p.Failure(errBoom)
	}
	require.Equal(t, circuitbreaker.Open, s.breaker.State().State)
}

// result is what a call made on another goroutine returned.
type result struct {
	resp string
	err  error
	took time.Duration
}

// callAsync calls s on a new goroutine and returns where its result will
// arrive.
func (s stack) callAsync(ctx context.Context) <-chan result {
	done := make(chan result, 1)
	go func() {
		resp, took, err := s.call(ctx)
		done <- result{resp, err, took}
	}()
	return done
}

// requireOpenError asserts that err is a breaker refusal returned as it
// is: not wrapped in a retry exhaustion (RT3, seed 000).
func requireOpenError(t *testing.T, err error) *circuitbreaker.OpenError {
	t.Helper()
	var open *circuitbreaker.OpenError
	require.ErrorAs(t, err, &open)
	assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
	// Not wrapped: err is the *OpenError itself. Its chain holds the
	// failure that tripped the breaker (CB2), which may be an exhaustion.
	_, isOpen := err.(*circuitbreaker.OpenError)
	assert.True(t, isOpen, "an open breaker must not be wrapped in *retry.ExhaustedError or anything: %v", err)
	assert.Same(t, open, err, "the rejection must reach the caller unwrapped")
	return open
}
