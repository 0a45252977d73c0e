package concurrency_test

import (
	"context"
	"testing"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/wrap"
)

func BenchmarkLayer(b *testing.B) {
	for name, mode := range modes {
		b.Run(name, func(b *testing.B) {
			l, err := concurrency.New(1 << 20)
			if err != nil {
				b.Fatal(err)
			}
			layer, err := concurrency.NewLayer[int, int](concurrency.Config{Limiter: l, Mode: mode})
			if err != nil {
				b.Fatal(err)
			}
			svc := layer.Wrap(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) { return req, nil }))
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = svc.Call(ctx, 1)
				}
			})
		})
	}
}

func BenchmarkLayerSerial(b *testing.B) {
	for name, mode := range modes {
		b.Run(name, func(b *testing.B) {
			l, err := concurrency.New(1 << 20)
			if err != nil {
				b.Fatal(err)
			}
			svc, err := wrap.Service(rampart.Service[int, int](rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) { return req, nil })), concurrency.NewLayer, concurrency.Config{Limiter: l, Mode: mode})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, _ = svc.Call(ctx, 1)
			}
		})
	}
}
