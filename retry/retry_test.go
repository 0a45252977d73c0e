package retry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/wrap"
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
