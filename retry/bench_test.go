package retry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/retry"
)

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
