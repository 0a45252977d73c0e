package ratelimit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/ratelimit"
)

func BenchmarkLayer(b *testing.B) {
	var calls atomic.Int64
	b.Run("free", func(b *testing.B) {
		svc := build(b, rate.NewLimiter(rate.Inf, 0), ratelimit.Refuse, echo(&calls))
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = svc.Call(ctx, 1)
			}
		})
	})
	b.Run("refused", func(b *testing.B) {
		svc := build(b, rate.NewLimiter(1e-9, 0), ratelimit.Refuse, echo(&calls))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = svc.Call(ctx, 1)
		}
	})
}

func BenchmarkKeyedLayer(b *testing.B) {
	k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: 1, Burst: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	layer, err := ratelimit.NewKeyedLayer[string, string](k, func(s string) string { return s }, ratelimit.Refuse)
	if err != nil {
		b.Fatal(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) { return req, nil }))
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprint("user", i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_, _ = svc.Call(ctx, keys[i%len(keys)])
			i++
		}
	})
}
