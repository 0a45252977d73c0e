package hedge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/wrap"
)

var echo = rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
	return req, nil
})

// fastPath returns echo behind a hedge layer whose delay is never reached.
func fastPath(tb testing.TB, hedgeable bool, percentile float64) rampart.Service[string, string] {
	svc, err := wrap.Service(rampart.Service[string, string](echo), hedge.NewLayer, hedge.Config[string, string]{
		Hedgeable: func(string) bool { return hedgeable },
		Budget:    budgettest.New(budgettest.Unlimited),
		Delay:     time.Hour,
		Quantile:  percentile,
	})
	require.NoError(tb, err)
	return svc
}

// The allocation counts below are what BenchmarkLayer_NoHedge reports: a
// cancelable context (2), the call record (1), and the timer with its
// callback (2). A request that is not hedgeable costs nothing.
func TestHedge_FastPathAllocations(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		hedgeable  bool
		percentile float64
		max        float64
	}{
		{name: "not hedgeable", hedgeable: false, max: 0},
		{name: "answered before the delay", hedgeable: true, max: 5},
		{name: "answered before the learned delay", hedgeable: true, percentile: 0.95, max: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := fastPath(t, tc.hedgeable, tc.percentile)
			allocs := testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, "req") })
			assert.LessOrEqual(t, allocs, tc.max)
		})
	}
}

func BenchmarkBare(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = echo.Call(ctx, "req")
	}
}

func BenchmarkLayer_NotHedgeable(b *testing.B) {
	svc := fastPath(b, false, 0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, "req")
	}
}

func BenchmarkLayer_NoHedge(b *testing.B) {
	svc := fastPath(b, true, 0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, "req")
	}
}

func BenchmarkLayer_NoHedgeLearned(b *testing.B) {
	svc := fastPath(b, true, 0.95)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, "req")
	}
}

func BenchmarkLayer_NoHedgeParallel(b *testing.B) {
	svc := fastPath(b, true, 0.95)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = svc.Call(ctx, "req")
		}
	})
}
