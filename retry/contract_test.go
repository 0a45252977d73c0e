package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/retry"
)

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

// TestExhaustedError_RT5_MessageSaysEachThingOnce checks that an exhausted
// error's message names the package once, the reason in parentheses and
// then the last error, and that errors.Is still matches the reason and
// the last error.
func TestExhaustedError_RT5_MessageSaysEachThingOnce(t *testing.T) {
	errLast := errors.New("connection reset")
	tests := []struct {
		name   string
		err    *retry.ExhaustedError
		want   string
		reason error
	}{
		{name: "max attempts", err: &retry.ExhaustedError{Attempts: 3, Err: errLast, Reason: retry.ErrMaxAttempts},
			want: "retry: gave up after 3 attempts (max attempts reached): connection reset", reason: retry.ErrMaxAttempts},
		{name: "budget", err: &retry.ExhaustedError{Attempts: 1, Err: errLast, Reason: retry.ErrBudgetExhausted},
			want: "retry: gave up after 1 attempt (budget exhausted): connection reset", reason: retry.ErrBudgetExhausted},
		{name: "deadline", err: &retry.ExhaustedError{Attempts: 2, Err: errLast, Reason: retry.ErrDeadline},
			want: "retry: gave up after 2 attempts (next attempt would start after the deadline): connection reset", reason: retry.ErrDeadline},
		{name: "hint forever", err: &retry.ExhaustedError{Attempts: 2, Err: errLast, Reason: retry.ErrHintForever},
			want: "retry: gave up after 2 attempts (the server's hint says the wait never ends): connection reset", reason: retry.ErrHintForever},
		{name: "caller's context", err: &retry.ExhaustedError{Attempts: 1, Err: errLast, Reason: context.Canceled},
			want: "retry: gave up after 1 attempt (context canceled): connection reset", reason: context.Canceled},
		{name: "zero", err: &retry.ExhaustedError{},
			want: "retry: gave up after 0 attempts: <nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.EqualError(t, tt.err, tt.want)
			assert.ErrorIs(t, tt.err, retry.ErrExhausted)
			if tt.reason != nil {
				assert.ErrorIs(t, tt.err, tt.reason)
				assert.ErrorIs(t, tt.err, errLast)
			}
		})
	}
}
