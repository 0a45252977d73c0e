package rampart_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/fallback"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// Cross-layer tests: the circuit breaker, retry (with its budget) and timeout
// layers composed with rampart.NewBuilder, in the two orders a program can
// choose, checked against DESIGN.md (CB, RT, TO) and seed 000:
//
//	A (recommended): timeout(total) -> retry -> breaker -> timeout(per attempt) -> service
//	B:               breaker -> retry -> timeout(per attempt) -> service
//
// Every test runs in a synctest bubble, so durations are exact, and every
// stack is built from ServiceFunc doubles and counters.

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

// End-to-end tests of a breaker refusal that carries its cause in the
// error chain (CB2): what the caller sees through a whole stack, and how
// the layers that classify errors with errors.Is / errors.As treat a
// refusal whose cause would, on its own, mean something else to them.

// statusError is a backend's own error type.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("backend: status %d", e.code) }

// causeStack is retry (3 attempts, 10ms apart) -> mid -> breaker (trips
// after 2 consecutive failures, cools down for a minute) -> backend, where
// mid (nil for none) sits between the retry loop and the breaker.
func causeStack(t *testing.T, mid rampart.Layer[string, string], backend rampart.Service[string, string]) (rampart.Service[string, string], *circuitbreaker.Breaker) {
	t.Helper()
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 2},
		CoolDown: time.Minute,
	})
	require.NoError(t, err)
	backoff, err := retry.NewConstant(10 * time.Millisecond)
	require.NoError(t, err)
	retrying, err := retry.NewLayer[string, string](retry.Config[string, string]{MaxAttempts: 3, Backoff: backoff})
	require.NoError(t, err)
	b := rampart.NewBuilder[string, string]().Layer(retrying)
	if mid != nil {
		b = b.Layer(mid)
	}
	return b.Layer(circuitbreaker.NewLayer[string, string](br, nil)).Service(backend), br
}

// TestCompose_CB2_RT3_RetryEndsAtOpenBreakerWithItsCause: a client whose
// retries end at an open breaker gets the *OpenError itself, and through
// it the backend's real failure.
func TestCompose_CB2_RT3_RetryEndsAtOpenBreakerWithItsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		backend := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			calls++
			return "", &statusError{code: 500}
		})
		svc, _ := causeStack(t, nil, backend)

		start := time.Now()
		_, err := svc.Call(t.Context(), "req")
		assert.Equal(t, 20*time.Millisecond, time.Since(start))
		assert.Equal(t, 2, calls, "the third attempt is rejected")

		oe, isOpen := err.(*circuitbreaker.OpenError)
		require.True(t, isOpen, "the rejection itself, not an exhaustion: %v", err)
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
		var ex *retry.ExhaustedError
		assert.NotErrorAs(t, err, &ex)
		var se *statusError
		require.ErrorAs(t, err, &se, "the backend's failure is in the chain")
		assert.Equal(t, 500, se.code)
		assert.ErrorIs(t, err, oe.Cause)
		assert.Same(t, se, oe.Cause)
		assert.Equal(t, time.Minute-10*time.Millisecond, oe.RetryAfter())
		assert.Equal(t, "circuitbreaker: open (retry after 59.99s): tripped by: backend: status 500", err.Error())
	})
}

// TestCompose_RT3_RejectionWithDeadlineCauseAtCallersDeadline: a breaker
// tripped by timeouts refuses an attempt just as the caller's deadline
// passes. The refusal's chain now matches context.DeadlineExceeded, the
// caller's ctx.Err(); the retry loop must still return the *OpenError
// itself (RT3), not mistake the refusal for the caller's own expiry and
// report the attempt before it inside an *ExhaustedError.
//
// Fails until retry's loop asks errors.Is(err, circuitbreaker.ErrOpen)
// before its "the attempt only reports the caller's cancellation" check.
func TestCompose_RT3_RejectionWithDeadlineCauseAtCallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		attemptTimedOut := &timeout.Error{After: time.Second, Err: context.DeadlineExceeded}
		backend := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			return "", attemptTimedOut
		})
		// slow stands for any layer between the loop and the breaker that
		// returns the refusal at the instant the caller's deadline
		// passes: it holds a refusal until then.
		slow := rampart.LayerFunc[string, string](func(inner rampart.Service[string, string]) rampart.Service[string, string] {
			return rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
				resp, err := inner.Call(ctx, req)
				if _, isOpen := err.(*circuitbreaker.OpenError); isOpen {
					<-ctx.Done()
				}
				return resp, err
			})
		})
		svc, br := causeStack(t, slow, backend)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()

		_, err := svc.Call(ctx, "req")
		require.Equal(t, circuitbreaker.Open, br.State().State)
		require.ErrorIs(t, err, circuitbreaker.ErrOpen)
		_, isOpen := err.(*circuitbreaker.OpenError)
		assert.True(t, isOpen, "an open breaker ends the loop as it is, not wrapped: %v", err)
	})
}

// TestCompose_CB2_HandlerAnswersOpenBreakerWith503: a server stack with a
// breaker outside a rate limiter in Refuse mode, whose refusals trip the
// breaker. The breaker's refusal then carries a *ratelimit.LimitedError;
// the Handler must still answer it as an open breaker (503 with the
// breaker's Retry-After), not as a rate-limit refusal (429).
//
// Fails until ramparthttp's status mapping asks
// errors.Is(err, circuitbreaker.ErrOpen) before ratelimit.ErrLimited.
func TestCompose_CB2_HandlerAnswersOpenBreakerWith503(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 1},
		CoolDown: rampart.Forever,
	})
	require.NoError(t, err)
	limited := rampart.LayerFunc[ramparthttp.Exchange, struct{}](func(rampart.Service[ramparthttp.Exchange, struct{}]) rampart.Service[ramparthttp.Exchange, struct{}] {
		return rampart.ServiceFunc[ramparthttp.Exchange, struct{}](func(context.Context, ramparthttp.Exchange) (struct{}, error) {
			return struct{}{}, &ratelimit.LimitedError{Wait: 2 * time.Second}
		})
	})
	h, err := ramparthttp.NewHandler(http.NotFoundHandler(), ramparthttp.ServerConfig{
		Layers:     []ramparthttp.ServerLayer{circuitbreaker.NewLayer[ramparthttp.Exchange, struct{}](br, nil), limited},
		RetryAfter: 7 * time.Second,
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	get := func() (int, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL)
		require.NoError(t, err)
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	code, after := get()
	assert.Equal(t, http.StatusTooManyRequests, code, "the limiter's own refusal")
	assert.Equal(t, "2", after)
	require.Equal(t, circuitbreaker.Open, br.State().State)

	code, after = get()
	assert.Equal(t, http.StatusServiceUnavailable, code, "an open breaker, whatever tripped it")
	assert.Empty(t, after, "a breaker open until reset advertises no Retry-After")
}

// TestCompose_CB2_TimeoutOutsideBreakerPassesRejectionOn: a timeout layer
// outside a breaker tripped by timeouts judges the refusal by the clock,
// not by its chain (which matches context.DeadlineExceeded and
// timeout.ErrTimeout): a refusal before the deadline is returned as it
// is, not turned into the outer layer's timeout.
func TestCompose_CB2_TimeoutOutsideBreakerPassesRejectionOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		require.NoError(t, err)
		perAttempt, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: time.Second})
		require.NoError(t, err)
		total, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: 5 * time.Second})
		require.NoError(t, err)
		hang := rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})
		svc := rampart.NewBuilder[string, string]().
			Layer(total).
			Layer(circuitbreaker.NewLayer[string, string](br, nil)).
			Layer(perAttempt).
			Service(hang)

		_, err = svc.Call(t.Context(), "a")
		var te *timeout.Error
		require.ErrorAs(t, err, &te)
		assert.Equal(t, time.Second, te.After, "the per-attempt timeout tripped the breaker")

		_, err = svc.Call(t.Context(), "b")
		oe, isOpen := err.(*circuitbreaker.OpenError)
		require.True(t, isOpen, "the rejection as it is: %v", err)
		assert.Same(t, te, oe.Cause)
		assert.ErrorIs(t, err, timeout.ErrTimeout, "a rejection matches what its cause matches")
	})
}

// TestCompose_CB2_FallbackOnOpenBreakerOnly: a fallback that answers only
// open-breaker refusals (When: errors.Is(err, ErrOpen)) still sees the
// backend's failure itself, the first time, and the refusal after; and
// its When can tell the two apart although the refusal's chain holds the
// failure.
func TestCompose_CB2_FallbackOnOpenBreakerOnly(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	require.NoError(t, err)
	fb, err := fallback.NewLayer(fallback.Config[string, string]{
		Fallback: func(_ context.Context, _ string, err error) (string, error) {
			var se *statusError
			if !assert.ErrorAs(t, err, &se) {
				return "", err
			}
			return fmt.Sprintf("cached (backend said %d)", se.code), nil
		},
		When: func(err error) bool {
			_, isOpen := err.(*circuitbreaker.OpenError)
			return isOpen
		},
	})
	require.NoError(t, err)
	svc := rampart.NewBuilder[string, string]().
		Layer(fb).
		Layer(circuitbreaker.NewLayer[string, string](br, nil)).
		Service(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			return "", &statusError{code: 502}
		}))

	_, err = svc.Call(t.Context(), "a")
	var se *statusError
	require.ErrorAs(t, err, &se, "the failure itself is not answered by the fallback")
	resp, err := svc.Call(t.Context(), "b")
	require.NoError(t, err)
	assert.Equal(t, "cached (backend said 502)", resp)
}

// The full stack, timeout -> retry + budget -> breaker, allocates on a
// succeeding call exactly what a bare context.WithTimeoutCause does: the
// deadline context is the only cost that is not zero, and it is inherent.
func TestStack_SuccessAllocatesOnlyTheDeadlineContext(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	rb, err := budget.New(budget.Config{})
	require.NoError(t, err)
	rt, err := retry.NewLayer(retry.Config[int, int]{Budget: rb})
	require.NoError(t, err)
	to, err := timeout.NewLayer(timeout.Config[int, int]{Timeout: time.Second})
	require.NoError(t, err)
	backend := rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req, nil })
	svc := rampart.NewBuilder[int, int]().Layer(to).Layer(rt).Layer(circuitbreaker.NewLayer[int, int](br, nil)).Service(backend)

	ctx := context.Background()
	stack := testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, 1) })

	cause := errors.New("deadline")
	bare := testing.AllocsPerRun(1000, func() {
		c, cancel := context.WithTimeoutCause(ctx, time.Second, cause)
		_, _ = backend.Call(c, 1)
		cancel()
	})
	assert.Equal(t, bare, stack)

	noTimeout := rampart.NewBuilder[int, int]().Layer(rt).Layer(circuitbreaker.NewLayer[int, int](br, nil)).Service(backend)
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _, _ = noTimeout.Call(ctx, 1) }))
}
