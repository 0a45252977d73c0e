package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/retry"
)

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

// stack builds retry (with a budget) outside a circuit breaker around inner.
func stack(t testing.TB, inner rampart.Service[string, string], attempts int) rampart.Service[string, string] {
	t.Helper()
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 5}})
	require.NoError(t, err)
	b, err := budget.New(budget.Config{})
	require.NoError(t, err)
	rl, err := retry.NewLayer(retry.Config[string, string]{MaxAttempts: attempts, Backoff: constant(t, ms(10)), Budget: b})
	require.NoError(t, err)
	return rampart.NewBuilder[string, string]().
		Layer(rl).
		Layer(circuitbreaker.NewLayer[string, string](br, nil)).
		Service(inner)
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

func BenchmarkRetrySuccess(b *testing.B) {
	ok := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })
	ctx := context.Background()
	run := func(b *testing.B, svc rampart.Service[string, string]) {
		b.Helper()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := svc.Call(ctx, "req"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, ok) })
	b.Run("retry", func(b *testing.B) { run(b, wrapT(b, ok, retry.Config[string, string]{})) })
	b.Run("retry+budget", func(b *testing.B) {
		bg, err := budget.New(budget.Config{})
		require.NoError(b, err)
		run(b, wrapT(b, ok, retry.Config[string, string]{Budget: bg}))
	})
	b.Run("retry+budget+breaker", func(b *testing.B) { run(b, stack(b, ok, 3)) })
	b.Run("retry+budget+breaker/parallel", func(b *testing.B) {
		svc := stack(b, ok, 3)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := svc.Call(ctx, "req"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkRetryFailure(b *testing.B) {
	boom := errors.New("boom")
	fails := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", boom })
	svc := wrapT(b, fails, retry.Config[string, string]{MaxAttempts: 2, Backoff: constant(b, 0), Budget: budget.Always})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, "req")
	}
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
