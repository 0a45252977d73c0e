package rampart_test

// Cross-layer tests: the circuit breaker, retry (with its budget) and timeout
// layers composed with rampart.NewBuilder, in the two orders a program can
// choose, checked against DESIGN.md (CB, RT, TO) and seed 000:
//
//	A (recommended): timeout(total) -> retry -> breaker -> timeout(per attempt) -> service
//	B:               breaker -> retry -> timeout(per attempt) -> service
//
// Every test runs in a synctest bubble, so durations are exact, and every
// stack is built from ServiceFunc doubles and counters.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// TestMain checks that no test of the package, these stacks included,
// leaves a goroutine behind (TO3).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

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

// The retry loop goes through the breaker before every attempt: the breaker
// trips on the second failure, the third attempt is refused without
// calling the service, and the refusal ends the loop as it is, although
// two attempts were left (RT3, seed 000).
func TestCompose_RT3_BreakerConsultedBeforeEachAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: time.Second,
			maxAttempts: 5, backoff: 100 * ms,
			failures: 2, reset: time.Minute,
		}, newTap(fail(errBoom)))

		_, took, err := s.call(t.Context())

		open := requireOpenError(t, err)
		assert.Equal(t, []time.Duration{0, 100 * ms}, s.backend.times(), "service calls")
		assert.Equal(t, []time.Duration{0, 100 * ms, 200 * ms}, s.attempts.times(), "attempts through the breaker")
		// Tripped at 100ms, refused at 200ms: 59.9s of cool-down left.
		assert.Equal(t, time.Minute-100*ms, open.RetryAfter())
		assert.Equal(t, errBoom, open.Cause)
		assert.Equal(t, 200*ms, took, "two backoffs, none after the rejection")
		assert.Equal(t, circuitbreaker.Open, s.breaker.State().State)
		assert.Equal(t, int64(1), s.budget.Counts().Deposits)
		assert.Equal(t, int64(2), s.budget.Withdrawals(), "one withdrawal per retry, none after the rejection")
	})
}

// A request that meets an open breaker makes one attempt, which the breaker
// refuses: no service call, no backoff, no budget withdrawal (RT3).
func TestCompose_RT3_OpenBreakerShortCircuitsTheRetryLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: time.Second,
			maxAttempts: 5, backoff: 100 * ms,
			failures: 1, reset: time.Minute,
		}, newTap(fail(errBoom)))
		_, _, err := s.call(t.Context()) // trips at 0, rejected at 100ms
		requireOpenError(t, err)
		require.Equal(t, 1, s.backend.calls())
		time.Sleep(time.Second)
		attempts, deposits, withdrawals := s.attempts.calls(), s.budget.Counts().Deposits, s.budget.Withdrawals()

		_, took, err := s.call(t.Context())

		open := requireOpenError(t, err)
		assert.Equal(t, time.Duration(0), took, "no backoff sleep after the rejection")
		assert.Equal(t, 1, s.backend.calls(), "the service is not called")
		assert.Equal(t, attempts+1, s.attempts.calls(), "exactly one attempt, refused by the breaker")
		assert.Equal(t, deposits+1, s.budget.Counts().Deposits, "the request deposits")
		assert.Equal(t, withdrawals, s.budget.Withdrawals(), "no retry is withdrawn")
		assert.Equal(t, time.Minute-1100*ms, open.RetryAfter())
	})
}

// A per-attempt timeout inside the breaker is a breaker failure (TO2): three
// attempts that each time out after 100ms, with 50ms backoffs, trip a
// breaker of three consecutive failures at exactly 400ms; the next attempt
// is refused and the refusal is returned as it is.
func TestCompose_TO2_PerAttemptTimeoutIsBreakerFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: 100 * ms,
			maxAttempts: 5, backoff: 50 * ms,
			failures: 3, reset: time.Minute,
		}, newTap(hang))
		start := time.Now()
		var trips []time.Duration
		defer s.breaker.Subscribe(func(tr circuitbreaker.Transition) {
			trips = append(trips, tr.Time.Sub(start))
		})()

		_, took, err := s.call(t.Context())

		open := requireOpenError(t, err)
		assert.Equal(t, []time.Duration{0, 150 * ms, 300 * ms}, s.backend.times())
		assert.Equal(t, []time.Duration{400 * ms}, trips, "3 attempts of 100ms and 2 backoffs of 50ms")
		assert.Equal(t, circuitbreaker.Open, s.breaker.State().State)
		assert.Equal(t, 450*ms, took, "rejected after the third backoff")
		var te *timeout.Error
		require.ErrorAs(t, open.Cause, &te, "the breaker was tripped by the timeout")
		assert.Equal(t, 100*ms, te.After)
		assert.ErrorIs(t, open.Cause, timeout.ErrTimeout)
		assert.ErrorIs(t, open.Cause, context.DeadlineExceeded)
	})
}

// A per-attempt timeout reaches the caller through the retry exhaustion
// wrapper still matching timeout.ErrTimeout and context.DeadlineExceeded
// (TO1, RT5), and each one counted as a breaker failure (TO2).
func TestCompose_TO1_TimeoutMatchesThroughExhaustion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: 100 * ms,
			maxAttempts: 3, backoff: 50 * ms,
			failures: 5, reset: time.Minute,
		}, newTap(hang))

		_, took, err := s.call(t.Context())

		var ex *retry.ExhaustedError
		require.ErrorAs(t, err, &ex)
		assert.Equal(t, 3, ex.Attempts)
		assert.ErrorIs(t, err, retry.ErrMaxAttempts)
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var te *timeout.Error
		require.ErrorAs(t, err, &te)
		assert.Equal(t, 100*ms, te.After, "the per-attempt timeout, not the total one")
		assert.Equal(t, 400*ms, took)
		assert.Equal(t, 3, s.consecutiveFailures(), "every timed-out attempt is a breaker failure")
		assert.Equal(t, circuitbreaker.Closed, s.breaker.State().State)
	})
}

// With the breaker outside the retry loop (stack B), the breaker sees one
// outcome per caller request, whatever happened to the attempts inside: a
// request that needed retries but succeeded is a success, a request whose
// retries were exhausted is one failure (whose cause is the
// *retry.ExhaustedError), and once open the breaker refuses the request
// before the retry loop starts.
func TestCompose_TO2_BreakerOutsideRetrySeesOneOutcomePerRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := stackB(t, stackConfig{
			perAttempt:  100 * ms,
			maxAttempts: 3, backoff: 10 * ms,
			failures: 2, reset: time.Minute,
		}, newTap(
			// request 1: three failures
			fail(errBoom), fail(errBoom), fail(errBoom),
			// request 2: two failures, then a success
			fail(errBoom), fail(errBoom), succeed("ok"),
			// request 3: three per-attempt timeouts
			hang, hang, hang,
			// request 4 and after: failures
			fail(errBoom),
		))

		_, took, err := s.call(t.Context())
		var ex *retry.ExhaustedError
		require.ErrorAs(t, err, &ex)
		assert.Equal(t, 3, ex.Attempts)
		assert.Equal(t, 20*ms, took)
		assert.Equal(t, 3, s.backend.calls())
		assert.Equal(t, 1, s.consecutiveFailures(), "three failed attempts are one breaker failure")

		resp, took, err := s.call(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "ok", resp)
		assert.Equal(t, 20*ms, took)
		assert.Equal(t, 6, s.backend.calls())
		assert.Equal(t, 0, s.consecutiveFailures(), "a request that succeeded on retry is one success")

		_, took, err = s.call(t.Context())
		require.ErrorAs(t, err, &ex)
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		assert.Equal(t, 320*ms, took)
		assert.Equal(t, 9, s.backend.calls())
		assert.Equal(t, 1, s.consecutiveFailures(), "timeouts through the retry wrapper are one failure (TO2)")

		_, _, err = s.call(t.Context())
		require.ErrorAs(t, err, &ex)
		assert.Equal(t, 12, s.backend.calls())
		assert.Equal(t, circuitbreaker.Open, s.breaker.State().State, "the second failed request trips it")

		_, took, err = s.call(t.Context())
		open := requireOpenError(t, err)
		assert.Equal(t, time.Duration(0), took)
		assert.Equal(t, 12, s.backend.calls(), "an open breaker outside the loop stops the whole request")
		assert.Equal(t, 5, s.attempts.calls(), "one breaker consultation per request")
		var cause *retry.ExhaustedError
		require.ErrorAs(t, open.Cause, &cause, "the breaker was tripped by the exhausted request")
		assert.Equal(t, 3, cause.Attempts)
		assert.Equal(t, errBoom, cause.Err)
		assert.Equal(t, int64(4), s.budget.Counts().Deposits, "the refused request never reached the retry layer")
		assert.Equal(t, int64(8), s.budget.Withdrawals(), "two retries in each of the four requests that ran")
	})
}

// The caller's cancellation counts as neither a breaker failure nor a
// reason to retry (CB8, RT2): cancelled mid-attempt or mid-backoff, the
// request stops at once with context.Canceled, not a timeout, and the
// breaker's run of failures is unchanged.
func TestCompose_CB8_CallerCancellationIsNeitherFailureNorRetry(t *testing.T) {
	for _, tt := range []struct {
		name        string
		backend     step
		failures    int   // breaker's run after the request: 1 before it
		withdrawals int64 // retries paid for
		raw         bool
	}{
		// The attempt ends with the caller's context.Canceled: ignored.
		{name: "mid-attempt", backend: hang, failures: 1, withdrawals: 0, raw: true},
		// The attempt failed for real (a failure), then the caller gave up
		// during the backoff: no further attempt. The retry was paid for
		// before the wait began.
		{name: "mid-backoff", backend: fail(errBoom), failures: 2, withdrawals: 1, raw: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := stackA(t, stackConfig{
					total: 10 * time.Second, perAttempt: time.Second,
					maxAttempts: 5, backoff: 100 * ms,
					failures: 5, reset: time.Minute,
				}, newTap(tt.backend))
				p, err := s.breaker.TryAcquire()
				require.NoError(t, err)
				require.True(t, p.Failure(errBoom))
				require.Equal(t, 1, s.consecutiveFailures())

				ctx, cancel := context.WithCancel(t.Context())
				done := s.callAsync(ctx)
				time.Sleep(30 * ms)
				cancel()
				r := <-done

				assert.Equal(t, 30*ms, r.took, "returns as soon as the caller cancels")
				assert.Equal(t, 1, s.backend.calls(), "never retried")
				assert.ErrorIs(t, r.err, context.Canceled)
				assert.NotErrorIs(t, r.err, timeout.ErrTimeout)
				assert.NotErrorIs(t, r.err, context.DeadlineExceeded)
				if tt.raw {
					assert.Equal(t, context.Canceled, r.err, "the caller's own error, unwrapped")
				}
				assert.Equal(t, tt.failures, s.consecutiveFailures())
				assert.Equal(t, circuitbreaker.Closed, s.breaker.State().State)
				assert.Equal(t, tt.withdrawals, s.budget.Withdrawals())
			})
		})
	}
}

// Attempts and backoffs never run past the outer deadline (RT4): with a 1s
// total timeout, the loop either stops before a backoff that would end at
// or after the deadline, returning the last attempt's error, or the last
// attempt is cut at exactly 1s by the outer timeout.
func TestCompose_RT4_AttemptsAndDelaysNeverExceedTheOuterDeadline(t *testing.T) {
	attempt2 := errors.New("attempt 2 failed")
	for _, tt := range []struct {
		name       string
		perAttempt time.Duration
		backoff    time.Duration
		script     []step
		calls      []time.Duration
		took       time.Duration
		check      func(t *testing.T, err error)
	}{
		{
			// 0-300 fails, wait to 500, 500-800 fails; a 200ms wait would
			// end at the deadline, so the loop stops at 800ms.
			name:    "stops before a backoff reaching the deadline",
			backoff: 200 * ms,
			script:  []step{failAfter(300*ms, errBoom), failAfter(300*ms, attempt2)},
			calls:   []time.Duration{0, 500 * ms},
			took:    800 * ms,
			check: func(t *testing.T, err error) {
				var ex *retry.ExhaustedError
				require.ErrorAs(t, err, &ex)
				assert.Equal(t, 2, ex.Attempts)
				assert.Equal(t, attempt2, ex.Err, "the last attempt's error")
				assert.ErrorIs(t, err, retry.ErrDeadline)
				assert.NotErrorIs(t, err, timeout.ErrTimeout)
			},
		},
		{
			// Per-attempt timeouts of 300ms: 0-300, wait to 450, 450-750,
			// wait to 900, then the third attempt is cut by the total
			// timeout at exactly 1s. The retry loop keeps the second
			// attempt's timeout, with the total deadline as its reason.
			name:       "last attempt cut by the outer timeout",
			perAttempt: 300 * ms,
			backoff:    150 * ms,
			script:     []step{hang},
			calls:      []time.Duration{0, 450 * ms, 900 * ms},
			took:       time.Second,
			check: func(t *testing.T, err error) {
				var te *timeout.Error
				require.ErrorAs(t, err, &te)
				assert.Equal(t, time.Second, te.After, "the total timeout")
				assert.ErrorIs(t, err, timeout.ErrTimeout)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				var ex *retry.ExhaustedError
				require.ErrorAs(t, te.Err, &ex)
				assert.Equal(t, 3, ex.Attempts)
				assert.ErrorIs(t, ex.Reason, context.DeadlineExceeded)
				var last *timeout.Error
				require.ErrorAs(t, ex.Err, &last, "the last real failure: the second attempt's timeout")
				assert.Equal(t, 300*ms, last.After)
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := stackA(t, stackConfig{
					total: time.Second, perAttempt: tt.perAttempt,
					maxAttempts: 10, backoff: tt.backoff,
					failures: 10, reset: time.Minute,
				}, newTap(tt.script...))

				_, took, err := s.call(t.Context())

				assert.Equal(t, tt.calls, s.backend.times())
				assert.Equal(t, tt.took, took)
				assert.LessOrEqual(t, took, time.Second)
				tt.check(t, err)
				assert.Equal(t, len(tt.calls), s.consecutiveFailures(), "each attempt is one breaker failure")
			})
		})
	}
}

// One retry budget shared by two stacks bounds their retries together
// (RT6): with no floor and a ratio of 0.1, ten requests, whichever stack
// they go to, earn exactly one retry, taken by the tenth request.
func TestCompose_RT6_BudgetSharedByTwoStacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared, err := budget.New(budget.Config{MinPerSecond: budget.NoFloor, Ratio: 0.1})
		require.NoError(t, err)
		cfg := stackConfig{
			total: 10 * time.Second, perAttempt: time.Second,
			maxAttempts: 3, backoff: 10 * ms,
			failures: 100, reset: time.Minute,
			budget: shared,
		}
		stacks := []stack{stackA(t, cfg, newTap(fail(errBoom))), stackA(t, cfg, newTap(fail(errBoom)))}

		attempts := map[int]int{} // attempts per request -> requests
		var took time.Duration
		for i := range 10 {
			_, d, err := stacks[i%2].call(t.Context())
			took += d
			var ex *retry.ExhaustedError
			require.ErrorAs(t, err, &ex)
			assert.ErrorIs(t, err, retry.ErrBudgetExhausted)
			assert.ErrorIs(t, err, errBoom)
			attempts[ex.Attempts]++
		}

		assert.Equal(t, map[int]int{1: 9, 2: 1}, attempts)
		assert.Equal(t, 5, stacks[0].backend.calls())
		assert.Equal(t, 6, stacks[1].backend.calls(), "the tenth request, on the second stack, retried")
		assert.Equal(t, 10*ms, took, "only the one retry waited")
		granted := stacks[0].budget.Counts().Granted + stacks[1].budget.Counts().Granted
		assert.Equal(t, int64(1), granted)
	})
}

// After the cool-down, a retrying caller's first attempt is the probe
// (CB1, CB3). A failed probe re-opens the breaker with a fresh cool-down,
// and the retry loop's next attempt gets the raw refusal (RT3); once the
// dependency is back, the next probe closes the breaker.
func TestCompose_CB3_HalfOpenProbeThroughRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probe circuitbreaker.Snapshot
		var s stack
		s = stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: time.Second,
			maxAttempts: 5, backoff: 100 * ms,
			failures: 2, reset: time.Second,
		}, newTap(
			fail(errBoom), fail(errBoom), // request 1 trips the breaker
			func(context.Context) (string, error) { // request 2: the probe fails
				probe = s.breaker.State()
				return "", errBoom
			},
			succeed("back"), // request 3: the probe succeeds
		))

		_, took, err := s.call(t.Context())
		requireOpenError(t, err)
		assert.Equal(t, 200*ms, took)

		// Tripped at 100ms with a 1s cool-down: HalfOpen from 1.1s.
		time.Sleep(900 * ms)
		require.Equal(t, circuitbreaker.HalfOpen, s.breaker.State().State)

		_, took, err = s.call(t.Context())
		open := requireOpenError(t, err)
		assert.Equal(t, circuitbreaker.HalfOpen, probe.State)
		assert.Equal(t, 1, probe.ProbesInFlight, "the first attempt is the probe")
		assert.Equal(t, []time.Duration{0, 100 * ms, 1100 * ms}, s.backend.times())
		assert.Equal(t, []time.Duration{0, 100 * ms, 200 * ms, 1100 * ms, 1200 * ms}, s.attempts.times())
		assert.Equal(t, 100*ms, took, "one backoff, then the rejection")
		assert.Equal(t, 900*ms, open.RetryAfter(), "a fresh 1s cool-down from the probe failure at 1.1s")
		assert.Equal(t, errBoom, open.Cause)
		assert.Equal(t, circuitbreaker.Open, s.breaker.State().State)

		time.Sleep(900 * ms) // to 2.1s: the cool-down is over
		resp, took, err := s.call(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "back", resp)
		assert.Equal(t, time.Duration(0), took)
		assert.Equal(t, circuitbreaker.Closed, s.breaker.State().State)
		assert.Equal(t, 0, s.consecutiveFailures())
	})
}

// While the one probe slot is taken, another retrying caller is refused at
// once with a refusal whose RetryAfter is zero, returned as it is: the
// retry loop neither waits nor retries (CB3, RT3). The probe then times out,
// which re-opens the breaker (TO2), and the prober's retry is refused too.
func TestCompose_CB3_ProbeSlotTakenRefusesOtherCallersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: 100 * ms,
			maxAttempts: 5, backoff: 50 * ms,
			failures: 1, reset: time.Second,
		}, newTap(hang))
		s.trip(t, 1)
		time.Sleep(time.Second)

		prober := s.callAsync(t.Context())
		synctest.Wait()
		require.Equal(t, 1, s.backend.calls(), "the first caller holds the probe slot")

		_, took, err := s.call(t.Context())
		open := requireOpenError(t, err)
		assert.Equal(t, time.Duration(0), open.RetryAfter(), "refused for want of a probe slot")
		assert.Equal(t, time.Duration(0), took)
		assert.Equal(t, 1, s.backend.calls())

		r := <-prober
		open = requireOpenError(t, r.err)
		assert.Equal(t, 150*ms, r.took, "probe timed out at 100ms, refused after a 50ms backoff")
		assert.Equal(t, 950*ms, open.RetryAfter(), "a fresh 1s cool-down from 1.1s, seen at 1.15s")
		assert.ErrorIs(t, open.Cause, timeout.ErrTimeout, "the timed-out probe re-opened the breaker")
		assert.Equal(t, 1, s.backend.calls())
	})
}

// A probe the caller cancels is ignored: it frees its slot without a
// verdict, so the breaker stays HalfOpen and the next caller's attempt is
// the probe that closes it (CB8, CB3).
func TestCompose_CB8_CancelledProbeFreesItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: time.Second,
			maxAttempts: 5, backoff: 50 * ms,
			failures: 1, reset: time.Second,
		}, newTap(hang, succeed("ok")))
		s.trip(t, 1)
		time.Sleep(time.Second)

		ctx, cancel := context.WithCancel(t.Context())
		prober := s.callAsync(ctx)
		time.Sleep(30 * ms)
		cancel()
		r := <-prober
		assert.Equal(t, context.Canceled, r.err)
		assert.Equal(t, 30*ms, r.took)
		st := s.breaker.State()
		assert.Equal(t, circuitbreaker.HalfOpen, st.State)
		assert.Equal(t, 0, st.ProbesInFlight, "the slot is free again")
		assert.Equal(t, 0, st.ProbesFailed)
		assert.Equal(t, 0, st.ProbesSucceeded)

		resp, _, err := s.call(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "ok", resp)
		assert.Equal(t, circuitbreaker.Closed, s.breaker.State().State)
		assert.Equal(t, 2, s.backend.calls())
	})
}

// A request whose context is already done makes no call and leaves no mark:
// the breaker layer refuses it before acquiring, so a HalfOpen breaker keeps
// its probe slot free, and the retry loop returns the caller's own error
// (CB8, RT2).
func TestCompose_CB8_DoneContextMakesNoAttempt(t *testing.T) {
	for _, tt := range []struct {
		name string
		ctx  func(context.Context) (context.Context, context.CancelFunc)
		want error
	}{
		{
			name: "cancelled",
			ctx: func(parent context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(parent)
				cancel()
				return ctx, cancel
			},
			want: context.Canceled,
		},
		{
			name: "deadline passed",
			ctx: func(parent context.Context) (context.Context, context.CancelFunc) {
				return context.WithDeadline(parent, time.Now())
			},
			want: context.DeadlineExceeded,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := stackA(t, stackConfig{
					total: 10 * time.Second, perAttempt: time.Second,
					maxAttempts: 5, backoff: 50 * ms,
					failures: 1, reset: time.Second,
				}, newTap(succeed("ok")))
				s.trip(t, 1)
				time.Sleep(time.Second)
				ctx, cancel := tt.ctx(t.Context())
				defer cancel()

				_, took, err := s.call(ctx)

				assert.Equal(t, tt.want, err, "the caller's own error, not a timeout or an exhaustion")
				assert.Equal(t, time.Duration(0), took)
				assert.Equal(t, 0, s.backend.calls())
				assert.Equal(t, 0, s.attempts.calls(), "the retry layer makes no attempt for a caller that already gave up (RT8)")
				st := s.breaker.State()
				assert.Equal(t, circuitbreaker.HalfOpen, st.State)
				assert.Equal(t, 0, st.ProbesInFlight+st.ProbesFailed+st.ProbesSucceeded, "no probe was used")
				assert.Equal(t, int64(0), s.budget.Withdrawals())
			})
		})
	}
}

// The caller's own deadline ending an attempt is reported as the caller's
// (context.DeadlineExceeded, never timeout.ErrTimeout, TO1), counts as a
// breaker failure (the dependency did not answer in the time it had, CB8)
// and is not retried (RT2). When an earlier attempt failed for real, that
// failure is kept, with the caller's deadline as the reason the loop
// stopped (RT5: no error is swallowed).
func TestCompose_TO1_CallerDeadlineIsReportedAsTheCallers(t *testing.T) {
	for _, tt := range []struct {
		name     string
		deadline time.Duration
		script   []step
		calls    []time.Duration
		check    func(t *testing.T, err error)
	}{
		{
			// The per-attempt deadline (100ms) is later than the caller's:
			// the timeout layer adds nothing and the caller's deadline ends
			// the attempt.
			name:     "first attempt",
			deadline: 80 * ms,
			script:   []step{hang},
			calls:    []time.Duration{0},
			check: func(t *testing.T, err error) {
				assert.Equal(t, context.DeadlineExceeded, err, "the caller's own error, unwrapped")
			},
		},
		{
			// 0-60 fails, wait to 110, then the second attempt (its own
			// deadline at 210ms) is ended by the caller's at 200ms.
			name:     "after a real failure",
			deadline: 200 * ms,
			script:   []step{failAfter(60*ms, errBoom), hang},
			calls:    []time.Duration{0, 110 * ms},
			check: func(t *testing.T, err error) {
				var ex *retry.ExhaustedError
				require.ErrorAs(t, err, &ex)
				assert.Equal(t, 2, ex.Attempts)
				assert.Same(t, errBoom, ex.Err, "the real failure, not the deadline")
				assert.Equal(t, context.DeadlineExceeded, ex.Reason)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := stackA(t, stackConfig{
					total: 10 * time.Second, perAttempt: 100 * ms,
					maxAttempts: 5, backoff: 50 * ms,
					failures: 5, reset: time.Minute,
				}, newTap(tt.script...))
				ctx, cancel := context.WithTimeout(t.Context(), tt.deadline)
				defer cancel()

				_, took, err := s.call(ctx)

				tt.check(t, err)
				assert.NotErrorIs(t, err, timeout.ErrTimeout)
				assert.Equal(t, tt.deadline, took)
				assert.Equal(t, tt.calls, s.backend.times())
				assert.Equal(t, len(tt.calls), s.consecutiveFailures(), "the caller's deadline during an attempt is a failure")
			})
		})
	}
}

// An attempt that straddles a trip cannot count (CB5): a slow attempt that
// started while the breaker was Closed times out after another caller's
// failures have tripped it, its outcome is discarded, and its retry loop
// gets the raw refusal, caused by the other caller's failure (RT3).
func TestCompose_CB5_StaleAttemptOutcomeIsDiscarded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: 100 * ms,
			maxAttempts: 5, backoff: 20 * ms,
			failures: 2, reset: time.Minute,
		}, newTap(hang, fail(errBoom)))
		start := time.Now()
		var transitions []time.Duration
		defer s.breaker.Subscribe(func(tr circuitbreaker.Transition) {
			transitions = append(transitions, tr.Time.Sub(start))
		})()

		slow := s.callAsync(t.Context()) // call 0: hangs until 100ms
		time.Sleep(10 * ms)
		_, took, err := s.call(t.Context()) // calls 1 and 2 at 10ms and 30ms trip it
		requireOpenError(t, err)
		assert.Equal(t, 40*ms, took)

		r := <-slow
		open := requireOpenError(t, r.err)
		assert.Equal(t, 120*ms, r.took, "timed out at 100ms, refused after a 20ms backoff")
		assert.Equal(t, errBoom, open.Cause, "the stale timeout did not replace the cause")
		assert.Equal(t, time.Minute-90*ms, open.RetryAfter(), "the cool-down from the trip at 30ms, not renewed")
		assert.Equal(t, []time.Duration{0, 10 * ms, 30 * ms}, s.backend.times())
		assert.Equal(t, []time.Duration{30 * ms}, transitions, "one trip, nothing from the stale outcome")
	})
}

// A panic in the service crosses the whole stack unchanged: the breaker
// records it as one failure (CB7), the retry loop does not retry it, and
// the timeouts release their timers on the way out.
func TestCompose_CB7_PanicCrossesTheStackOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: time.Second,
			maxAttempts: 5, backoff: 50 * ms,
			failures: 5, reset: time.Minute,
		}, newTap(func(context.Context) (string, error) { panic("kaboom") }))

		var recovered any
		func() {
			defer func() { recovered = recover() }()
			_, _ = s.svc.Call(t.Context(), "req")
		}()

		assert.Equal(t, "kaboom", recovered)
		assert.Equal(t, 1, s.backend.calls())
		assert.Equal(t, 1, s.consecutiveFailures())
		assert.Equal(t, int64(0), s.budget.Withdrawals())
	})
}

// With a per-attempt timeout that abandons attempts ignoring their context
// (the opt-in of TO3), each abandoned attempt is a breaker failure and the
// retry loop goes on at the layer's pace; the abandoned goroutines deliver
// their late results to Late and then end (the bubble and goleak check it).
func TestCompose_TO3_AbandonedAttemptsEndAndReportLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var late []time.Duration
		s := stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: 100 * ms,
			maxAttempts: 3, backoff: 50 * ms,
			failures: 5, reset: time.Minute,
			abandon: func(resp string, err error) {
				assert.Equal(t, "late", resp)
				assert.NoError(t, err)
				mu.Lock()
				defer mu.Unlock()
				late = append(late, time.Since(start))
			},
		}, newTap(func(context.Context) (string, error) {
			time.Sleep(time.Second) // ignores its context
			return "late", nil
		}))

		_, took, err := s.call(t.Context())

		var ex *retry.ExhaustedError
		require.ErrorAs(t, err, &ex)
		assert.Equal(t, 3, ex.Attempts)
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		assert.Equal(t, 400*ms, took)
		assert.Equal(t, 3, s.consecutiveFailures())

		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []time.Duration{time.Second, 1150 * ms, 1300 * ms}, late)
	})
}

// A context.Canceled that is not the caller's (the caller's context is
// live: the dependency or its client cancelled something of its own, as an
// HTTP/2 stream reset or a gRPC CANCELLED status can surface) is "any other
// error" for CB8, so a failure: the retry loop retries it (RT2 spares only
// the caller's cancellation), and the breaker must count it too, or the
// two layers disagree and the retries hammer a dependency the breaker
// never learns about.
func TestCompose_CB8_DependencyCancellationIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := stackA(t, stackConfig{
			total: 10 * time.Second, perAttempt: time.Second,
			maxAttempts: 5, backoff: 100 * ms,
			failures: 2, reset: time.Minute,
		}, newTap(fail(fmt.Errorf("stream reset: %w", context.Canceled))))

		_, took, err := s.call(t.Context())

		requireOpenError(t, err)
		assert.Equal(t, 2, s.backend.calls())
		assert.Equal(t, 200*ms, took)
		assert.Equal(t, circuitbreaker.Open, s.breaker.State().State)
	})
}

// With the breaker outside the retry loop (stack B), a caller who gives up
// during a backoff ends the request with an *retry.ExhaustedError whose
// reason is context.Canceled. The breaker should judge that request the
// same way whatever the failed attempts were: it is the caller's
// cancellation (CB8: ignored).
func TestCompose_CB8_CallerCancelDuringBackoffCountsTheSameOutsideRetry(t *testing.T) {
	for _, tt := range []struct {
		name    string
		attempt step
	}{
		{name: "after a failed attempt", attempt: fail(errBoom)},
		{name: "after a timed-out attempt", attempt: hang},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := stackB(t, stackConfig{
					perAttempt:  100 * ms,
					maxAttempts: 5, backoff: time.Second,
					failures: 5, reset: time.Minute,
				}, newTap(tt.attempt))
				ctx, cancel := context.WithCancel(t.Context())
				done := s.callAsync(ctx)
				time.Sleep(500 * ms) // in the backoff after the first attempt
				cancel()
				r := <-done

				assert.ErrorIs(t, r.err, context.Canceled)
				assert.Equal(t, 500*ms, r.took)
				assert.Equal(t, 1, s.backend.calls())
				assert.Equal(t, 0, s.consecutiveFailures(), "the caller's cancellation is ignored")
			})
		})
	}
}

// Many callers share one stack, one breaker and one budget. Whatever the
// interleaving, the accounting across the layers adds up: every attempt is
// the first of a request or a granted retry; every attempt either reached
// the service or was refused by the breaker, and a refusal ends its request
// as a raw refusal; the budget never grants more than Ratio of the
// requests (RT6, CB4, RT3).
func TestCompose_Hammer_LayersAccountForEveryAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const callers, requests = 8, 50
		shared, err := budget.New(budget.Config{MinPerSecond: budget.NoFloor, Ratio: 0.5})
		require.NoError(t, err)
		var n atomic.Int64
		flaky := func(ctx context.Context) (string, error) {
			if n.Add(1)%3 == 0 {
				return "ok", nil
			}
			time.Sleep(ms)
			return "", errBoom
		}
		s := stackA(t, stackConfig{
			total: time.Second, perAttempt: 50 * ms,
			maxAttempts: 4, backoff: ms,
			failures: 3, reset: 5 * ms,
			budget: shared,
		}, newTap(flaky))

		var ok, refused, exhausted atomic.Int64
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for range requests {
					_, err := s.svc.Call(t.Context(), "req")
					var open *circuitbreaker.OpenError
					switch {
					case err == nil:
						ok.Add(1)
					case errors.As(err, &open):
						assert.Same(t, open, err, "a refusal is never wrapped")
						refused.Add(1)
					case errors.Is(err, retry.ErrExhausted):
						exhausted.Add(1)
					default:
						t.Errorf("unexpected error: %v", err)
					}
					time.Sleep(ms)
				}
			})
		}
		wg.Wait()

		total := int64(callers * requests)
		granted := s.budget.Counts().Granted
		assert.Equal(t, total, ok.Load()+refused.Load()+exhausted.Load(), "no request lost")
		assert.Equal(t, total, s.budget.Counts().Deposits)
		assert.Equal(t, total+granted, int64(s.attempts.calls()), "attempts = requests + granted retries")
		assert.Equal(t, int64(s.attempts.calls()), int64(s.backend.calls())+refused.Load(), "attempts = service calls + refusals")
		assert.LessOrEqual(t, granted, total/2, "the budget grants at most Ratio of the requests")
		assert.Positive(t, refused.Load(), "the breaker tripped at some point")
		assert.Positive(t, granted, "some retries happened")
	})
}

// One breaker guarding two stacks (two endpoints of one dependency, say)
// protects both (CB4): failures through the first trip it, and a retrying
// caller of the second is refused at once, its service never called; after
// the cool-down, the second stack's call is the probe that closes it for
// both.
func TestCompose_CB4_BreakerSharedByTwoStacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared, err := circuitbreaker.New(circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 2},
			CoolDown: time.Second,
		})
		require.NoError(t, err)
		cfg := stackConfig{
			total: 10 * time.Second, perAttempt: time.Second,
			maxAttempts: 5, backoff: 100 * ms,
			breaker: shared,
		}
		failing := stackA(t, cfg, newTap(fail(errBoom)))
		healthy := stackA(t, cfg, newTap(succeed("ok")))

		_, _, err = failing.call(t.Context())
		requireOpenError(t, err)
		assert.Equal(t, 2, failing.backend.calls())

		_, took, err := healthy.call(t.Context())
		open := requireOpenError(t, err)
		assert.Equal(t, errBoom, open.Cause, "tripped through the other stack")
		assert.Equal(t, time.Duration(0), took)
		assert.Equal(t, 0, healthy.backend.calls())

		time.Sleep(open.RetryAfter())
		resp, _, err := healthy.call(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "ok", resp)
		assert.Equal(t, circuitbreaker.Closed, shared.State().State)
		_, _, err = failing.call(t.Context())
		requireOpenError(t, err)
		assert.Equal(t, 4, failing.backend.calls(), "closed again for the first stack too, until it trips it again")
	})
}
