package loadshed_test

import (
	"context"
	"testing"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/loadshed"
)

func BenchmarkThrottleLayer(b *testing.B) {
	th, err := loadshed.NewThrottle(loadshed.ThrottleConfig{})
	if err != nil {
		b.Fatal(err)
	}
	layer, err := loadshed.NewThrottleLayer[int, int](th, nil)
	if err != nil {
		b.Fatal(err)
	}
	svc := layer.Wrap(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		if req%2 == 0 {
			return 0, errUnavailable
		}
		return req, nil
	}))
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_, _ = svc.Call(ctx, i)
			i++
		}
	})
}

func BenchmarkLayer(b *testing.B) {
	shed, err := loadshed.NewLayer[int, int](loadshed.Config{Readiness: loadshed.ReadyFunc(func() bool { return true })})
	if err != nil {
		b.Fatal(err)
	}
	svc := shed.Wrap(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) { return req, nil }))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, 1)
	}
}
