package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/retry"
)

// script is a test service that returns the i-th scripted outcome on its
// i-th call (the last one repeating) and records when each call started.
type script struct {
	outcomes []outcome
	starts   []time.Duration
	begin    time.Time
}

type outcome struct {
	resp string
	err  error
}

func newScript(outcomes ...outcome) *script {
	return &script{outcomes: outcomes, begin: time.Now()}
}

func (s *script) Call(_ context.Context, _ string) (string, error) {
	s.starts = append(s.starts, time.Since(s.begin))
	o := s.outcomes[min(len(s.starts), len(s.outcomes))-1]
	return o.resp, o.err
}

func (s *script) calls() int { return len(s.starts) }

func fail(msg string) outcome { return outcome{err: errors.New(msg)} }

func constant(t testing.TB, d time.Duration) retry.Backoff {
	t.Helper()
	b, err := retry.NewConstant(d)
	require.NoError(t, err)
	return b
}

func wrapT(t testing.TB, svc rampart.Service[string, string], cfg retry.Config[string, string]) rampart.Service[string, string] {
	t.Helper()
	s, err := wrap.Service(svc, retry.NewLayer, cfg)
	require.NoError(t, err)
	return s
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func TestRetry_RT1_MaxAttemptsCountsTheFirstCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		last := errors.New("third")
		s := newScript(fail("first"), fail("second"), outcome{err: last})
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(100))})

		_, err := svc.Call(t.Context(), "req")

		assert.Equal(t, 3, s.calls(), "one call plus two retries")
		var ex *retry.ExhaustedError
		require.ErrorAs(t, err, &ex)
		assert.Equal(t, 3, ex.Attempts)
		assert.Same(t, last, ex.Err)
		assert.ErrorIs(t, err, last)
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.ErrorIs(t, err, retry.ErrMaxAttempts)
		assert.NotErrorIs(t, err, retry.ErrBudgetExhausted)
		assert.EqualError(t, err, "retry: gave up after 3 attempts (max attempts reached): third")
	})
}

func TestRetry_RT1_ConstantBackoffTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(fail("boom"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(100))})
		start := time.Now()

		_, err := svc.Call(t.Context(), "req")

		require.Error(t, err)
		assert.Equal(t, []time.Duration{0, ms(100), ms(200)}, s.starts)
		assert.Equal(t, ms(200), time.Since(start), "no wait after the last attempt")
	})
}

func TestRetry_RT1_ExponentialBackoffTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustExponential(t, retry.Exponential{Base: ms(10), Max: ms(35), Jitter: retry.NoJitter})
		s := newScript(fail("boom"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 5, Backoff: b})

		_, err := svc.Call(t.Context(), "req")

		require.Error(t, err)
		assert.Equal(t, []time.Duration{0, ms(10), ms(30), ms(65), ms(100)}, s.starts)
	})
}

func TestRetry_RT1_DefaultsToThreeAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(fail("boom"))
		svc := wrapT(t, s, retry.Config[string, string]{})
		_, err := svc.Call(t.Context(), "req")
		assert.ErrorIs(t, err, retry.ErrMaxAttempts)
		assert.Equal(t, 3, s.calls())
		for i, start := range s.starts[1:] {
			// default full jitter: at most 100ms, then at most 200ms after the previous call
			assert.LessOrEqual(t, start-s.starts[i], ms(100)<<i)
		}
	})
}

func TestRetry_SuccessIsReturnedAtOnce(t *testing.T) {
	s := newScript(outcome{resp: "ok"})
	b := budgettest.New(0)
	svc := wrapT(t, s, retry.Config[string, string]{Budget: b})
	resp, err := svc.Call(t.Context(), "req")
	require.NoError(t, err)
	assert.Equal(t, "ok", resp)
	assert.Equal(t, 1, s.calls())
	assert.Equal(t, int64(1), b.Counts().Deposits)
	assert.Equal(t, int64(0), b.Withdrawals())
}

func TestRetry_RecoversAfterFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(fail("a"), fail("b"), outcome{resp: "ok"})
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(5))})
		resp, err := svc.Call(t.Context(), "req")
		require.NoError(t, err)
		assert.Equal(t, "ok", resp)
		assert.Equal(t, 3, s.calls())
	})
}

// is503 retries errors and responses starting with "503".
func is503(resp string, err error) bool { return err != nil || strings.HasPrefix(resp, "503") }

func TestRetry_RT2_ResponseCanAskForRetry(t *testing.T) {
	tests := []struct {
		name          string
		outcomes      []outcome
		wantResp      string
		wantDiscarded []string
	}{
		{
			name:          "recovers",
			outcomes:      []outcome{{resp: "503#1"}, {resp: "503#2"}, {resp: "200"}},
			wantResp:      "200",
			wantDiscarded: []string{"503#1", "503#2"},
		},
		{
			// a response is a result, not an error: the last one is
			// returned, not lost, and not discarded
			name:          "exhausted returns the last response",
			outcomes:      []outcome{{resp: "503#1"}, {resp: "503#2"}, {resp: "503#3"}},
			wantResp:      "503#3",
			wantDiscarded: []string{"503#1", "503#2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScript(tt.outcomes...)
				var discarded []string
				svc := wrapT(t, s, retry.Config[string, string]{
					Backoff:   constant(t, ms(10)),
					Retryable: is503,
					Discard:   func(resp string) { discarded = append(discarded, resp) },
				})
				resp, err := svc.Call(t.Context(), "req")
				require.NoError(t, err)
				assert.Equal(t, tt.wantResp, resp)
				assert.Equal(t, tt.wantDiscarded, discarded)
			})
		})
	}
}

func TestRetry_RT2_LastResponseReturnedWithError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		s := newScript(outcome{resp: "partial#1", err: boom}, outcome{resp: "partial#2", err: boom})
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 2, Backoff: constant(t, ms(10))})
		resp, err := svc.Call(t.Context(), "req")
		assert.ErrorIs(t, err, boom)
		assert.Equal(t, "partial#2", resp)
	})
}

func TestRetry_RT2_PredicateRejects(t *testing.T) {
	boom := errors.New("boom")
	s := newScript(outcome{err: boom})
	svc := wrapT(t, s, retry.Config[string, string]{Retryable: func(string, error) bool { return false }})
	_, err := svc.Call(t.Context(), "req")
	assert.Same(t, boom, err, "returned as the service returned it")
	assert.Equal(t, 1, s.calls())
}

func TestRetry_RT2_PermanentIsNotRetried(t *testing.T) {
	boom := errors.New("boom")
	marked := fmt.Errorf("wrapped: %w", retry.Permanent(boom))
	s := newScript(outcome{err: marked})
	svc := wrapT(t, s, retry.Config[string, string]{Retryable: func(string, error) bool { return true }})
	_, err := svc.Call(t.Context(), "req")
	assert.Same(t, marked, err)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, "wrapped: boom", err.Error())
	assert.Equal(t, 1, s.calls())
	assert.NoError(t, retry.Permanent(nil))
}

// A layer below that was given a nil service (or a zero value that must
// be made by its constructor) fails every call the same way: retrying it
// would only spend the budget and the backoff before the caller sees a
// wiring mistake, so it is returned at once, as the layer below built it.
func TestRetry_RT2_NilServiceIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nilBelow := rampart.Failing[string, string]("timeout: Wrap")
		calls := 0
		svc := wrapT(t, rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			calls++
			return nilBelow.Call(ctx, req)
		}), retry.Config[string, string]{MaxAttempts: 3, Retryable: func(string, error) bool { return true }})
		_, err := svc.Call(t.Context(), "req")
		assert.EqualError(t, err, "timeout: Wrap: rampart: nil service")
		assert.ErrorIs(t, err, rampart.ErrNilService)
		assert.Equal(t, 1, calls)
	})
}

func TestRetry_RT2_CallerCancellationIsNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	svc := wrapT(t, rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
		calls++
		cancel()
		return "", ctx.Err()
	}), retry.Config[string, string]{Retryable: func(string, error) bool { return true }})

	_, err := svc.Call(ctx, "req")

	assert.Same(t, context.Canceled, err, "the caller's own cancellation comes back as is")
	assert.Equal(t, 1, calls)
}

func TestRetry_RT2_OtherErrorAfterCancellationKeepsTheRealError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	boom := errors.New("boom")
	svc := wrapT(t, rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		cancel()
		return "", boom
	}), retry.Config[string, string]{})

	_, err := svc.Call(ctx, "req")

	var ex *retry.ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, 1, ex.Attempts)
	assert.Same(t, boom, ex.Err)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestRetry_RT2_CancelDuringBackoffStopsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		s := newScript(fail("boom"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 5, Backoff: constant(t, time.Second)})
		time.AfterFunc(ms(300), cancel)
		start := time.Now()

		_, err := svc.Call(ctx, "req")

		assert.Equal(t, ms(300), time.Since(start), "returns when cancelled, not when the timer fires")
		assert.Equal(t, 1, s.calls())
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.EqualError(t, err, "retry: gave up after 1 attempt (context canceled): boom")
	})
}

func TestRetry_RT2_CancelDuringALaterAttemptKeepsTheLastFailure(t *testing.T) {
	notContext := func(_ string, err error) bool {
		return err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	tests := []struct {
		name      string
		timeout   bool // the caller's deadline rather than cancel ends the call
		retryable func(string, error) bool
		want      error
	}{
		{name: "cancel", want: context.Canceled},
		{name: "cancel, predicate rejects context errors", retryable: notContext, want: context.Canceled},
		{name: "caller deadline", timeout: true, want: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tt.timeout {
					ctx, cancel = context.WithTimeout(ctx, ms(50))
					defer cancel()
				} else {
					time.AfterFunc(ms(50), cancel)
				}
				boom := errors.New("boom")
				calls := 0
				svc := wrapT(t, rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
					calls++
					if calls == 1 {
						return "", boom
					}
					<-ctx.Done() // the second attempt hangs until the caller gives up
					return "", ctx.Err()
				}), retry.Config[string, string]{Backoff: constant(t, ms(10)), Retryable: tt.retryable})
				start := time.Now()

				_, err := svc.Call(ctx, "req")

				assert.Equal(t, ms(50), time.Since(start))
				assert.Equal(t, 2, calls)
				var ex *retry.ExhaustedError
				require.ErrorAs(t, err, &ex)
				assert.Equal(t, 2, ex.Attempts)
				assert.Same(t, boom, ex.Err, "the real failure, not the cancellation")
				assert.ErrorIs(t, err, tt.want)
			})
		})
	}
}

func TestRetry_RT2_CancelCauseIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		errShutdown := errors.New("shutting down")
		s := newScript(fail("boom"))
		svc := wrapT(t, s, retry.Config[string, string]{Backoff: constant(t, time.Second)})
		time.AfterFunc(ms(10), func() { cancel(errShutdown) })

		_, err := svc.Call(ctx, "req")

		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, errShutdown)
		assert.EqualError(t, err, "retry: gave up after 1 attempt (context canceled: shutting down): boom")
	})
}

func TestRetry_RT3_OpenErrorIsReturnedAsIs(t *testing.T) {
	open := &circuitbreaker.OpenError{}
	for _, first := range []outcome{{err: open}, fail("boom")} {
		s := newScript(first, outcome{err: open})
		svc := wrapT(t, s, retry.Config[string, string]{
			Backoff:   constant(t, 0),
			Retryable: func(string, error) bool { return true },
		})
		_, err := svc.Call(t.Context(), "req")
		assert.Same(t, open, err, "never wrapped in ExhaustedError")
		assert.NotErrorIs(t, err, retry.ErrExhausted)
	}
}

func TestRetry_RT3_WrappedOpenErrorIsNotRetried(t *testing.T) {
	open := fmt.Errorf("dial: %w", &circuitbreaker.OpenError{})
	s := newScript(outcome{err: open})
	svc := wrapT(t, s, retry.Config[string, string]{})
	_, err := svc.Call(t.Context(), "req")
	assert.Same(t, open, err)
	assert.Equal(t, 1, s.calls())
}

func TestRetry_RT4_StopsWhenNextWaitWouldPassTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), ms(250))
		defer cancel()
		s := newScript(fail("one"), fail("two"), fail("three"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 10, Backoff: constant(t, ms(100))})
		start := time.Now()

		_, err := svc.Call(ctx, "req")

		assert.Equal(t, ms(200), time.Since(start), "stopped at once, without sleeping toward the deadline")
		assert.Equal(t, []time.Duration{0, ms(100), ms(200)}, s.starts)
		var ex *retry.ExhaustedError
		require.ErrorAs(t, err, &ex)
		assert.Equal(t, 3, ex.Attempts)
		assert.EqualError(t, ex.Err, "three")
		assert.ErrorIs(t, err, retry.ErrDeadline)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestRetry_RT4_WaitEndingExactlyAtTheDeadlineIsNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), ms(200))
		defer cancel()
		s := newScript(fail("boom"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 10, Backoff: constant(t, ms(100))})

		_, err := svc.Call(ctx, "req")

		assert.Equal(t, []time.Duration{0, ms(100)}, s.starts)
		assert.ErrorIs(t, err, retry.ErrDeadline)
	})
}

func TestRetry_RT5_ErrorsAsFindsTypedLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(outcome{err: &hintError{delay: 0}})
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 2, Backoff: constant(t, ms(1))})
		_, err := svc.Call(t.Context(), "req")
		var he *hintError
		assert.ErrorAs(t, err, &he)
	})
}

func TestRetry_RT6_DepositsOncePerRequestWithdrawsPerRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budgettest.New(100)
		s := newScript(fail("boom"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(1)), Budget: b})
		_, err := svc.Call(t.Context(), "req")
		assert.ErrorIs(t, err, retry.ErrMaxAttempts)
		assert.Equal(t, int64(1), b.Counts().Deposits)
		assert.Equal(t, int64(2), b.Withdrawals())
	})
}

func TestRetry_RT6_EmptyBudgetStopsWithLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budgettest.New(1)
		s := newScript(fail("one"), fail("two"), fail("three"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 5, Backoff: constant(t, ms(100)), Budget: b})
		start := time.Now()

		_, err := svc.Call(t.Context(), "req")

		assert.Equal(t, ms(100), time.Since(start), "no wait once the budget refuses")
		var ex *retry.ExhaustedError
		require.ErrorAs(t, err, &ex)
		assert.Equal(t, 2, ex.Attempts)
		assert.EqualError(t, ex.Err, "two")
		assert.ErrorIs(t, err, retry.ErrBudgetExhausted)
		assert.NotErrorIs(t, err, retry.ErrMaxAttempts)
	})
}

// hintError asks the caller to wait delay before trying again.
type hintError struct{ delay time.Duration }

func (e *hintError) Error() string             { return fmt.Sprintf("slow down for %v", e.delay) }
func (e *hintError) RetryAfter() time.Duration { return e.delay }

func TestRetry_RT7_Hints(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		hint    func(string, error) (time.Duration, bool)
		maxHint time.Duration
		want    time.Duration // start of the second attempt
	}{
		{name: "longer error hint wins", err: &hintError{delay: ms(500)}, want: ms(500)},
		{name: "wrapped error hint", err: fmt.Errorf("get: %w", &hintError{delay: ms(500)}), want: ms(500)},
		{name: "shorter error hint ignored", err: &hintError{delay: ms(50)}, want: ms(100)},
		{name: "negative hint counts as zero", err: &hintError{delay: -time.Hour}, want: ms(100)},
		{name: "huge hint clamped to default MaxHint", err: &hintError{delay: 24 * time.Hour}, want: time.Minute},
		{name: "huge hint clamped to MaxHint", err: &hintError{delay: 24 * time.Hour}, maxHint: time.Second, want: time.Second},
		{
			name: "hint func", err: errors.New("503"),
			hint: func(string, error) (time.Duration, bool) { return ms(700), true },
			want: ms(700),
		},
		{
			name: "hint func not ok", err: errors.New("503"),
			hint: func(string, error) (time.Duration, bool) { return time.Hour, false },
			want: ms(100),
		},
		{
			name: "longest of error and func", err: &hintError{delay: ms(900)},
			hint: func(string, error) (time.Duration, bool) { return ms(700), true },
			want: ms(900),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScript(outcome{err: tt.err})
				svc := wrapT(t, s, retry.Config[string, string]{
					MaxAttempts: 2, Backoff: constant(t, ms(100)), Hint: tt.hint, MaxHint: tt.maxHint,
				})
				_, err := svc.Call(t.Context(), "req")
				assert.ErrorIs(t, err, retry.ErrMaxAttempts)
				assert.Equal(t, []time.Duration{0, tt.want}, s.starts)
			})
		})
	}
}

func TestRetry_RT7_HintFromResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(outcome{resp: "503"}, outcome{resp: "200"})
		svc := wrapT(t, s, retry.Config[string, string]{
			Backoff:   constant(t, ms(100)),
			Retryable: is503,
			Hint: func(resp string, _ error) (time.Duration, bool) {
				return 2 * time.Second, resp == "503"
			},
		})
		resp, err := svc.Call(t.Context(), "req")
		require.NoError(t, err)
		assert.Equal(t, "200", resp)
		assert.Equal(t, []time.Duration{0, 2 * time.Second}, s.starts)
	})
}

func TestRetry_RT7_HintPastDeadlineStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		s := newScript(outcome{err: &hintError{delay: 2 * time.Second}})
		svc := wrapT(t, s, retry.Config[string, string]{Backoff: constant(t, ms(100))})
		start := time.Now()

		_, err := svc.Call(ctx, "req")

		assert.Equal(t, time.Duration(0), time.Since(start))
		assert.Equal(t, 1, s.calls())
		assert.ErrorIs(t, err, retry.ErrDeadline)
		var he *hintError
		assert.ErrorAs(t, err, &he)
	})
}

func TestRetry_ConfigErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name string
		cfg  retry.Config[string, string]
		want string
	}{
		{name: "negative max hint", cfg: retry.Config[string, string]{MaxHint: -time.Second}, want: "retry: MaxHint must be 0 (the default, 1m0s) or positive, got -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := retry.NewLayer(tt.cfg)
			assert.Nil(t, l)
			assert.EqualError(t, err, tt.want)
			s, err := wrap.Service(newScript(outcome{}), retry.NewLayer, tt.cfg)
			assert.Nil(t, s)
			assert.EqualError(t, err, tt.want)
		})
	}
}

func TestRetry_LayerWrapsManyServices(t *testing.T) {
	l, err := retry.NewLayer(retry.Config[string, string]{MaxAttempts: 2, Backoff: constant(t, 0)})
	require.NoError(t, err)
	a, b := newScript(fail("a")), newScript(outcome{resp: "b"})
	_, errA := l.Wrap(a).Call(t.Context(), "req")
	respB, errB := l.Wrap(b).Call(t.Context(), "req")
	assert.ErrorIs(t, errA, retry.ErrMaxAttempts)
	assert.NoError(t, errB)
	assert.Equal(t, "b", respB)
	assert.Equal(t, 2, a.calls())
	assert.Equal(t, 1, b.calls())
}

func TestRetry_SuccessPathDoesNotAllocate(t *testing.T) {
	ok := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })
	svc := wrapT(t, ok, retry.Config[string, string]{Budget: budgettest.New(budgettest.Unlimited)})
	ctx := t.Context()
	allocs := testing.AllocsPerRun(1000, func() {
		_, _ = svc.Call(ctx, "req")
	})
	assert.Zero(t, allocs)
}

func TestRetry_RT1_OneAttemptNeverRetriesNorWraps(t *testing.T) {
	boom := errors.New("boom")
	counting := budgettest.New(1)
	svc, err := wrap.Service(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) {
		return 7, boom
	}), retry.NewLayer, retry.Config[int, int]{MaxAttempts: 1, Budget: counting})
	require.NoError(t, err)

	got, err := svc.Call(context.Background(), 0)
	assert.Equal(t, 7, got)
	assert.Same(t, boom, err, "MaxAttempts 1 never wraps the error")
	assert.Equal(t, int64(1), counting.Counts().Deposits)
	assert.Equal(t, int64(0), counting.Withdrawals())
}

func TestRetry_RT6_NilPointerBudgetIsAnError(t *testing.T) {
	var b *budgettest.Budget
	_, err := retry.NewLayer[int, int](retry.Config[int, int]{Budget: b})
	assert.EqualError(t, err, "retry: Budget must not be a nil pointer, got *budgettest.Budget(nil)")
}

// Each retry's context says which attempt it is; the first goes with the
// caller's context. A call whose context says its request is already a
// retry upstream makes one attempt and stops with ErrUpstreamRetry.
func TestRetry_PG4_AttemptsTravelAndUpstreamRetryStops(t *testing.T) {
	var seen []int
	inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		seen = append(seen, rampart.AttemptOf(ctx))
		return "", errors.New("down")
	})
	svc, err := wrap.Service(inner, retry.NewLayer, retry.Config[string, string]{MaxAttempts: 3, Backoff: retry.BackoffFunc(func(int, time.Duration) time.Duration { return 0 }), Budget: budget.Always})
	require.NoError(t, err)
	_, err = svc.Call(context.Background(), "r")
	require.ErrorIs(t, err, retry.ErrMaxAttempts)
	assert.Equal(t, []int{0, 2, 3}, seen)

	for _, upstream := range []int{1, 2} {
		seen = nil
		_, err = svc.Call(rampart.WithAttempt(context.Background(), upstream), "r")
		if upstream == 1 {
			require.ErrorIs(t, err, retry.ErrMaxAttempts, "a first attempt upstream may be retried here")
			assert.Equal(t, []int{1, 2, 3}, seen)
			continue
		}
		require.ErrorIs(t, err, retry.ErrUpstreamRetry)
		var ex *retry.ExhaustedError
		require.ErrorAs(t, err, &ex)
		assert.Equal(t, 1, ex.Attempts)
		assert.Equal(t, []int{2}, seen)
	}
}

// With a Clock the waits between attempts are timed on it, and a step of
// its wall reading changes nothing.
func TestRetry_CK3_WaitsRunOnTheSuppliedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
		var starts []time.Duration
		svc := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			starts = append(starts, clk.Monotonic()-time.Hour)
			if len(starts) < 3 {
				return "", errors.New("again")
			}
			return "ok", nil
		})
		s := wrapT(t, svc, retry.Config[string, string]{Backoff: constant(t, time.Second), Clock: clk, Budget: budget.Always})
		var resp string
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err = s.Call(context.Background(), "x")
		}()
		for range 2 {
			synctest.Wait()
			clk.Jump(-time.Hour) // a wall step moves no wait
			clk.Advance(time.Second - time.Nanosecond)
			synctest.Wait()
			require.Equal(t, 1, clk.Pending(), "still waiting a nanosecond before the backoff ends")
			clk.Advance(time.Nanosecond)
		}
		<-done
		require.NoError(t, err)
		assert.Equal(t, "ok", resp)
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, starts)
		assert.Equal(t, 2, clk.Stats().AfterFunc, "each wait is a timer of the clock")
		assert.Zero(t, clk.Stats().Now)
	})
}

// A wait on the supplied clock still ends when the caller's context does.
func TestRetry_CK3_ClockWaitEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
		svc := newScript(fail("a"))
		s := wrapT(t, svc, retry.Config[string, string]{Backoff: constant(t, time.Minute), Clock: clk})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		_, err := s.Call(ctx, "x")
		assert.Equal(t, time.Second, time.Since(start))
		assert.ErrorIs(t, err, context.Canceled)
		var ex *retry.ExhaustedError
		require.True(t, errors.As(err, &ex))
		assert.Equal(t, 1, ex.Attempts)
	})
}

func TestRetry_RT8_NoAttemptForDoneContext(t *testing.T) {
	cause := errors.New("user left")
	tests := []struct {
		name string
		ctx  func(context.Context) context.Context
		want []error // errors.Is targets
	}{
		{name: "cancelled", ctx: func(parent context.Context) context.Context {
			ctx, cancel := context.WithCancel(parent)
			cancel()
			return ctx
		}, want: []error{context.Canceled}},
		{name: "cancelled with a cause", ctx: func(parent context.Context) context.Context {
			ctx, cancel := context.WithCancelCause(parent)
			cancel(cause)
			return ctx
		}, want: []error{context.Canceled, cause}},
		{name: "deadline passed", ctx: func(parent context.Context) context.Context {
			ctx, cancel := context.WithDeadline(parent, time.Now())
			_ = cancel
			return ctx
		}, want: []error{context.DeadlineExceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := budgettest.New(10)
			s := newScript(fail("boom"))
			svc := wrapT(t, s, retry.Config[string, string]{Backoff: constant(t, 0), Budget: b})

			_, err := svc.Call(tt.ctx(t.Context()), "req")

			assert.Zero(t, s.calls(), "no attempt for a caller that has given up")
			for _, target := range tt.want {
				assert.ErrorIs(t, err, target)
			}
			assert.NotErrorIs(t, err, retry.ErrExhausted, "no attempt ran, so nothing was exhausted")
			assert.Zero(t, b.Counts().Deposits, "no deposit")
			assert.Zero(t, b.Withdrawals(), "no withdrawal")
			assert.Zero(t, b.Counts().Refunds)
		})
	}
}

// Over a circuit breaker, whose own check of the context the first
// attempt skips, since the retry layer has just made it.
func TestRetry_RT8_NoAttemptThroughABreakerForDoneContext(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	require.NoError(t, err)
	b := budgettest.New(10)
	rl, err := retry.NewLayer(retry.Config[string, string]{Backoff: constant(t, 0), Budget: b})
	require.NoError(t, err)
	s := newScript(fail("boom"), fail("boom"))
	svc := rampart.NewBuilder[string, string]().Layer(rl).Layer(circuitbreaker.NewLayer[string, string](br, nil)).Service(s)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = svc.Call(ctx, "req")

	assert.Same(t, context.Canceled, err)
	assert.Zero(t, s.calls(), "no attempt")
	assert.Zero(t, b.Counts().Deposits, "no deposit")
	assert.Equal(t, circuitbreaker.Closed, br.State().State)
	assert.Equal(t, circuitbreaker.Counts{}, br.State().Counts, "nothing reached the breaker")

	_, err = svc.Call(t.Context(), "req")
	assert.ErrorIs(t, err, circuitbreaker.ErrOpen, "the first attempt's failure trips the breaker, which refuses the retry")
	assert.Equal(t, 1, s.calls())
	assert.Equal(t, int64(1), b.Counts().Deposits)
}

func TestRetry_RT8_NoAttemptForDoneContextWithOneAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := budgettest.New(0)
	s := newScript(outcome{resp: "ok"})
	svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 1, Budget: b})

	_, err := svc.Call(ctx, "req")

	assert.Same(t, context.Canceled, err)
	assert.Zero(t, s.calls())
	assert.Zero(t, b.Counts().Deposits)
}

func TestRetry_RT9_HintThatNeverEndsStopsTheLoop(t *testing.T) {
	tests := []struct {
		name  string
		delay time.Duration
	}{
		{name: "rate.InfDuration", delay: rate.InfDuration},
		{name: "rampart.Forever", delay: rampart.Forever},
	}
	for _, tt := range tests {
		t.Run(tt.name+" in the error", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := budgettest.New(10)
				last := fmt.Errorf("limited: %w", &hintError{delay: tt.delay})
				s := newScript(outcome{err: last})
				svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(10)), Budget: b})
				start := time.Now()

				_, err := svc.Call(t.Context(), "req")

				assert.Zero(t, time.Since(start), "no wait")
				assert.Equal(t, 1, s.calls())
				var ex *retry.ExhaustedError
				require.ErrorAs(t, err, &ex)
				assert.Equal(t, 1, ex.Attempts)
				assert.Same(t, last, ex.Err)
				assert.ErrorIs(t, err, retry.ErrHintForever)
				assert.Zero(t, b.Withdrawals(), "nothing withdrawn for a retry that is never sent")
			})
		})
		t.Run(tt.name+" from Config.Hint on a response", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScript(outcome{resp: "429"})
				svc := wrapT(t, s, retry.Config[string, string]{
					MaxAttempts: 3,
					Backoff:     constant(t, ms(10)),
					Retryable:   func(resp string, err error) bool { return resp == "429" },
					Hint:        func(string, error) (time.Duration, bool) { return tt.delay, true },
				})
				start := time.Now()

				resp, err := svc.Call(t.Context(), "req")

				assert.Zero(t, time.Since(start), "no wait")
				assert.Equal(t, 1, s.calls())
				assert.Equal(t, "429", resp, "the last response is the result")
				assert.NoError(t, err)
			})
		})
	}
}

func TestRetry_RT9_FiniteHintAboveMaxHintStillClamps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(outcome{err: &hintError{delay: rampart.Forever - 1}}, outcome{resp: "ok"})
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 2, Backoff: constant(t, 0), MaxHint: time.Minute})

		resp, err := svc.Call(t.Context(), "req")

		require.NoError(t, err)
		assert.Equal(t, "ok", resp)
		assert.Equal(t, []time.Duration{0, time.Minute}, s.starts)
	})
}

// newRatioBudget returns a budget without a floor that earns one retry per
// request, so its balance counts deposits minus retries exactly.
func newRatioBudget(t testing.TB) *budget.Budget {
	t.Helper()
	b, err := budget.New(budget.Config{MinPerSecond: budget.NoFloor, Ratio: 1})
	require.NoError(t, err)
	return b
}

func TestRetry_RT10_RetryRefusedByTheBreakerIsRefunded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newRatioBudget(t)
		open := &circuitbreaker.OpenError{}
		s := newScript(fail("boom"), outcome{err: open})
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(10)), Budget: b})

		_, err := svc.Call(t.Context(), "req")

		assert.Same(t, open, err)
		assert.Equal(t, 2, s.calls())
		assert.Equal(t, 1.0, b.Balance(), "the refused retry gave its token back")
	})
}

func TestRetry_RT10_RetryCancelledDuringTheBackoffIsRefunded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newRatioBudget(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		s := newScript(fail("boom"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, time.Second), Budget: b})
		time.AfterFunc(ms(300), cancel)

		_, err := svc.Call(ctx, "req")

		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, s.calls())
		assert.Equal(t, 1.0, b.Balance(), "the retry never sent gave its token back")
	})
}

func TestRetry_RT10_SentRetriesAreNotRefunded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budgettest.New(10)
		s := newScript(fail("one"), fail("two"), fail("three"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(10)), Budget: b})

		_, err := svc.Call(t.Context(), "req")

		assert.ErrorIs(t, err, retry.ErrMaxAttempts)
		assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 2}, b.Counts())
	})
}

func TestRetry_RT10_RefundCountsExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budgettest.New(10)
		s := newScript(fail("boom"), outcome{err: &circuitbreaker.OpenError{}})
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(10)), Budget: b})

		_, err := svc.Call(t.Context(), "req")

		assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
		assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 1, Refunds: 1}, b.Counts())
	})
}

func TestRetry_ErrorsThatWrapATimeoutAreTimeouts(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "last error is a net timeout", err: &retry.ExhaustedError{Attempts: 2, Err: fmt.Errorf("dial: %w", os.ErrDeadlineExceeded), Reason: retry.ErrMaxAttempts}, want: true},
		{name: "last error is a deadline", err: &retry.ExhaustedError{Attempts: 2, Err: context.DeadlineExceeded, Reason: retry.ErrBudgetExhausted}, want: true},
		{name: "caller's deadline ended the loop", err: &retry.ExhaustedError{Attempts: 1, Err: errors.New("503"), Reason: context.DeadlineExceeded}, want: true},
		{name: "plain failure", err: &retry.ExhaustedError{Attempts: 3, Err: errors.New("reset"), Reason: retry.ErrMaxAttempts}, want: false},
		{name: "next attempt past the deadline", err: &retry.ExhaustedError{Attempts: 1, Err: errors.New("503"), Reason: retry.ErrDeadline}, want: false},
		{name: "cancelled", err: &retry.ExhaustedError{Attempts: 1, Err: errors.New("503"), Reason: context.Canceled}, want: false},
		{name: "permanent timeout", err: retry.Permanent(os.ErrDeadlineExceeded), want: true},
		{name: "permanent failure", err: retry.Permanent(errors.New("bad request")), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, os.IsTimeout(tt.err), "os.IsTimeout")
			uerr := &url.Error{Op: "Get", URL: "http://example.test", Err: tt.err}
			assert.Equal(t, tt.want, uerr.Timeout(), "url.Error.Timeout")
			var ne net.Error
			require.ErrorAs(t, error(uerr), &ne)
			assert.Equal(t, tt.want, ne.Timeout(), "net.Error.Timeout")
		})
	}
}

// A nil service fails with an error matching rampart.ErrNilService: at
// construction through Wrap, on every call through a layer's Wrap.
func TestRetry_NilService(t *testing.T) {
	cfg := retry.Config[string, string]{}
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := retry.NewLayer(cfg)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "retry: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}

func TestRetry_ZeroErrorsDoNotPanic(t *testing.T) {
	assert.Equal(t, "retry: permanent: <nil>", (&retry.PermanentError{}).Error())
	assert.False(t, (&retry.PermanentError{}).Timeout())
	assert.Equal(t, "retry: gave up after 0 attempts: <nil>", (&retry.ExhaustedError{}).Error())
	assert.False(t, (&retry.ExhaustedError{}).Timeout())
}

func TestRetry_NilBackoffIsAnError(t *testing.T) {
	tests := []struct {
		name    string
		backoff retry.Backoff
		want    string
	}{
		{name: "nil BackoffFunc", backoff: retry.BackoffFunc(nil), want: "retry: Backoff must not be a nil func or pointer, got retry.BackoffFunc(nil)"},
		{name: "nil pointer", backoff: (*nilBackoff)(nil), want: "retry: Backoff must not be a nil func or pointer, got *retry_test.nilBackoff(nil)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := retry.NewLayer(retry.Config[string, string]{Backoff: tt.backoff})
			assert.Nil(t, l)
			assert.EqualError(t, err, tt.want)
		})
	}
}

type nilBackoff struct{ d time.Duration }

func (b *nilBackoff) Delay(int, time.Duration) time.Duration { return b.d }

// retry and hedge follow one rule for MaxAttempts: 0 is the default, 1
// disables, and above the package's MaxAttemptsLimit is an error, never
// clamped.
func TestRetry_RT12_MaxAttemptsAboveTheLimitIsAnError(t *testing.T) {
	_, err := retry.NewLayer(retry.Config[string, string]{MaxAttempts: 100})
	require.NoError(t, err, "the limit itself is accepted")

	tests := []struct {
		name        string
		maxAttempts int
		want        string
	}{
		{name: "above the limit", maxAttempts: 101, want: "retry: MaxAttempts must be 0 (the default, 3) or between 1 and 100, got 101"},
		{name: "negative", maxAttempts: -1, want: "retry: MaxAttempts must be 0 (the default, 3) or between 1 and 100, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := retry.NewLayer(retry.Config[string, string]{MaxAttempts: tt.maxAttempts})
			assert.EqualError(t, err, tt.want)
		})
	}
}

// Without a Budget the layer has one of its own with package budget's
// defaults, so a dependency that fails every call gets far fewer retries
// than MaxAttempts would allow; budget.Always removes the bound.
func TestRetry_RT13_DefaultBudgetBoundsRetries(t *testing.T) {
	for _, tc := range []struct {
		name        string
		budget      retry.Budget
		wantAttempt int
	}{
		// 1000 first attempts, and 300 retries: the default budget's
		// reserve of 10 retries a second over its 10s window, and 20% of
		// the 1000 requests.
		{name: "no Budget: the layer's own default budget", budget: nil, wantAttempt: 1000 + 100 + 200},
		{name: "budget.Always: no bound", budget: budget.Always, wantAttempt: 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				attempts := 0
				down := rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) {
					attempts++
					return 0, errors.New("down")
				})
				noWait, err := retry.NewConstant(0)
				require.NoError(t, err)
				svc, err := wrap.Service(down, retry.NewLayer, retry.Config[int, int]{MaxAttempts: 3, Backoff: noWait, Budget: tc.budget})
				require.NoError(t, err)
				// 1000 calls, one after another, all at one instant.
				for i := range 1000 {
					_, err := svc.Call(t.Context(), i)
					require.Error(t, err)
				}
				assert.Equal(t, tc.wantAttempt, attempts)
			})
		})
	}
}

// scripted returns a service that returns errs in turn, then succeeds.
func scripted(errs ...error) rampart.Service[string, string] {
	n := 0
	return rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		n++
		if n <= len(errs) {
			return "", errs[n-1]
		}
		return "ok", nil
	})
}

func TestRetry_EV2_Events(t *testing.T) {
	errDown := errors.New("down")
	open := &circuitbreaker.OpenError{Name: "db"}
	ev := func(kind observe.Kind, attempt int, d time.Duration, err error) observe.Event {
		return observe.Event{Source: observe.Retry, Name: "payments", Kind: kind, Attempt: attempt, Duration: d, Err: err}
	}
	tests := []struct {
		name   string
		inner  rampart.Service[string, string]
		budget retry.Budget
		want   []observe.Event
	}{
		{name: "success at once", inner: scripted()},
		{name: "success on the third attempt", inner: scripted(errDown, errDown), want: []observe.Event{
			ev(observe.Retrying, 2, 10*time.Millisecond, errDown),
			ev(observe.Retrying, 3, 10*time.Millisecond, errDown),
			ev(observe.RetryEnd, 3, 0, nil),
		}},
		{name: "attempts used up", inner: scripted(errDown, errDown, errDown), want: []observe.Event{
			ev(observe.Retrying, 2, 10*time.Millisecond, errDown),
			ev(observe.Retrying, 3, 10*time.Millisecond, errDown),
			ev(observe.RetryEnd, 3, 0, retry.ErrMaxAttempts),
		}},
		{name: "open breaker at the first attempt", inner: scripted(open), want: []observe.Event{
			ev(observe.RetryEnd, 1, 0, open),
		}},
		{name: "open breaker at a retry", inner: scripted(errDown, open), want: []observe.Event{
			ev(observe.Retrying, 2, 10*time.Millisecond, errDown),
			ev(observe.RetryEnd, 2, 0, open),
		}},
		{name: "budget empty", inner: scripted(errDown), budget: budget.Never, want: []observe.Event{
			ev(observe.RetryEnd, 1, 0, retry.ErrBudgetExhausted),
		}},
		{name: "failure not to be retried", inner: scripted(retry.Permanent(errDown))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec observetest.Recorder
				backoff, err := retry.NewConstant(10 * time.Millisecond)
				require.NoError(t, err)
				svc, err := wrap.Service(tt.inner, retry.NewLayer, retry.Config[string, string]{
					Backoff: backoff, Budget: tt.budget, Name: "payments", Observer: &rec,
				})
				require.NoError(t, err)
				_, _ = svc.Call(t.Context(), "req")
				require.Equal(t, tt.want, rec.Events())
			})
		})
	}
}

func TestRetry_EV2_EndAtCallerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		errDown := errors.New("down")
		backoff, err := retry.NewConstant(time.Second)
		require.NoError(t, err)
		svc, err := wrap.Service(scripted(errDown), retry.NewLayer, retry.Config[string, string]{Backoff: backoff, Observer: &rec})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(500*time.Millisecond, cancel)
		_, _ = svc.Call(ctx, "req")
		require.Equal(t, []observe.Event{
			{Source: observe.Retry, Kind: observe.Retrying, Attempt: 2, Duration: time.Second, Err: errDown},
			{Source: observe.Retry, Kind: observe.RetryEnd, Attempt: 1, Err: context.Canceled},
		}, rec.Events())
	})
}

func TestRetry_EV1_NoObserverNoAllocation(t *testing.T) {
	svc, err := wrap.Service(scripted(), retry.NewLayer, retry.Config[string, string]{Name: "payments"})
	require.NoError(t, err)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, "req") })
	require.Zero(t, allocs)
}

// The budget package's budgets satisfy the interfaces retry declares.
var (
	_ retry.Budget   = (*budget.Budget)(nil)
	_ retry.Budget   = budget.Always
	_ retry.Refunder = (*budget.Budget)(nil)
	_ retry.Refunder = budget.Always
)

func TestRetry_RT6_SharedBudgetBoundsRetriesAcrossRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{MinPerSecond: budget.NoFloor, Ratio: 0.1})
		require.NoError(t, err)
		s := newScript(fail("down"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(1)), Budget: b})

		attempts := map[int]int{} // attempts per request -> requests
		for range 100 {
			_, err := svc.Call(t.Context(), "req")
			var ex *retry.ExhaustedError
			require.ErrorAs(t, err, &ex)
			assert.ErrorIs(t, err, retry.ErrBudgetExhausted)
			attempts[ex.Attempts]++
		}

		// Without the budget the dead dependency would see 300 calls. With
		// it, every tenth request earns one retry: 110 calls.
		assert.Equal(t, 110, s.calls())
		assert.Equal(t, map[int]int{1: 90, 2: 10}, attempts)
	})
}

func TestRetry_RT6_StaticBudgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			budget retry.Budget
			calls  int
			reason error
		}{
			{budget: budget.Always, calls: 3, reason: retry.ErrMaxAttempts},
			{budget: budget.Never, calls: 1, reason: retry.ErrBudgetExhausted},
		} {
			s := newScript(fail("down"))
			svc := wrapT(t, s, retry.Config[string, string]{Backoff: constant(t, ms(1)), Budget: tt.budget})
			_, err := svc.Call(t.Context(), "req")
			assert.ErrorIs(t, err, tt.reason)
			assert.Equal(t, tt.calls, s.calls())
		}
	})
}

func TestRetry_RT3_TrippedBreakerEndsTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript(fail("down"))
		svc := stack(t, s, 10)
		start := time.Now()

		_, err := svc.Call(t.Context(), "req")

		assert.Equal(t, 5, s.calls(), "the breaker trips after 5 failures and the loop stops")
		assert.Equal(t, ms(50), time.Since(start), "5 waits of 10ms, the last before the rejected attempt")
		var open *circuitbreaker.OpenError
		require.ErrorAs(t, err, &open)
		assert.NotErrorIs(t, err, retry.ErrExhausted, "returned as is (RT3)")
		assert.EqualError(t, open.Cause, "down")
	})
}

func TestRetry_StackSuccessPathDoesNotAllocate(t *testing.T) {
	ok := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })
	svc := stack(t, ok, 3)
	ctx := context.Background()
	_, _ = svc.Call(ctx, "req") // the budget's first deposit creates its timer
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		_, _ = svc.Call(ctx, "req")
	}))
}

func TestRetry_RT9_RateLimitThatCanNeverGrantIsNotWaitedOut(t *testing.T) {
	tests := []struct {
		name  string
		burst int
		calls int           // attempts that reach the service
		took  time.Duration // backoff waits before the refused attempt
	}{
		{name: "burst 0", burst: 0, calls: 0, took: 0},
		{name: "limit 0, burst spent", burst: 1, calls: 1, took: ms(10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScript(fail("down"))
				limited, err := wrap.Service(s, ratelimit.NewLayer, ratelimit.Config{Limiter: rate.NewLimiter(0, tt.burst), Mode: ratelimit.Refuse})
				require.NoError(t, err)
				svc := wrapT(t, limited, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(10))})
				start := time.Now()

				_, err = svc.Call(t.Context(), "req")

				assert.Equal(t, tt.took, time.Since(start), "no minute-long wait for a token that never comes")
				assert.Equal(t, tt.calls, s.calls())
				assert.ErrorIs(t, err, retry.ErrHintForever)
				assert.ErrorIs(t, err, ratelimit.ErrLimited)
			})
		})
	}
}

func TestRetry_RT10_RetryRefusedByATrippedBreakerIsRefunded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		require.NoError(t, err)
		b, err := budget.New(budget.Config{MinPerSecond: budget.NoFloor, Ratio: 1})
		require.NoError(t, err)
		rl, err := retry.NewLayer(retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, ms(10)), Budget: b})
		require.NoError(t, err)
		s := newScript(fail("down"))
		svc := rampart.NewBuilder[string, string]().
			Layer(rl).
			Layer(circuitbreaker.NewLayer[string, string](br, nil)).
			Service(s)

		_, err = svc.Call(t.Context(), "req")

		assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
		assert.Equal(t, 1, s.calls(), "the first failure trips the breaker, which refuses the retry")
		assert.Equal(t, 1.0, b.Balance(), "the request's deposit, with the refused retry's token given back")
	})
}

// A deadline shorter than the next wait ends the loop at once with the
// last failure, and the budget pays for nothing: neither a backoff nor a
// server's hint (Retry-After: 5) longer than the time left withdraws a
// token for a retry that could never be sent (temporalio/temporal#4403).
func TestRetry_RT4_DeadlineShorterThanTheWaitWithdrawsNothing(t *testing.T) {
	for name, tt := range map[string]struct {
		backoff time.Duration
		err     error
	}{
		"backoff": {backoff: ms(300), err: errors.New("unavailable")},
		"hint":    {backoff: ms(1), err: &hintError{delay: 5 * time.Second}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), ms(250))
				defer cancel()
				s := newScript(outcome{err: tt.err})
				b := budgettest.New(budgettest.Unlimited)
				svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, tt.backoff), Budget: b})
				start := time.Now()

				_, err := svc.Call(ctx, "req")

				assert.Equal(t, time.Duration(0), time.Since(start))
				assert.ErrorIs(t, err, retry.ErrDeadline)
				assert.ErrorIs(t, err, tt.err)
				assert.Equal(t, 1, s.calls())
				assert.Equal(t, budgettest.Counts{Deposits: 1}, b.Counts())
			})
		})
	}
}

// A quiet hour does not bank an hour of retries: the budget's floor holds
// at most MinPerSecond × Window (10 × 10s = 100 by default), so a storm of
// 1000 failing requests right after it gets 100 + 20% of 1000 = 300
// retries, not two each: 1300 attempts at the dependency instead of 3000.
func TestRetry_RT6_QuietHourThenStormIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budgettest.Over(new(budget.Budget))
		s := newScript(fail("unavailable"))
		svc := wrapT(t, s, retry.Config[string, string]{MaxAttempts: 3, Backoff: constant(t, 0), Budget: b})
		time.Sleep(time.Hour)
		for range 1000 {
			_, err := svc.Call(t.Context(), "req")
			require.Error(t, err)
		}
		assert.Equal(t, 1300, s.calls())
		c := b.Counts()
		assert.Equal(t, int64(1000), c.Deposits)
		assert.Equal(t, int64(300), c.Granted)
	})
}

// TestRetry_NZ1_NilPointerClockIsAnError: a Clock that is a nil pointer inside the interface is refused
// at construction, not dereferenced at the first reading mid-traffic.
func TestRetry_NZ1_NilPointerClockIsAnError(t *testing.T) {
	_, err := retry.NewLayer(retry.Config[string, string]{Clock: (*clock.Fake)(nil)})
	assert.EqualError(t, err, "retry: Clock must not be a nil func or pointer, got *clock.Fake(nil)")
}
