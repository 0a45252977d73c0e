package rampartotel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartotel"
	"github.com/rampart-go/rampart/retry"
)

// observers are the ways a stack can be observed: not at all, by a log, by
// OpenTelemetry, and by both.
func observers(tb testing.TB) []struct {
	name string
	obs  observe.Observer
} {
	log, err := observe.NewLog(observe.LogConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(tb, err)
	otelObs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))})
	require.NoError(tb, err)
	return []struct {
		name string
		obs  observe.Observer
	}{
		{name: "none", obs: nil},
		{name: "slog", obs: log},
		{name: "otel", obs: otelObs},
		{name: "slog+otel", obs: observe.Join(log, otelObs)},
	}
}

// closedStack is a retry layer over a Closed breaker over a service that
// succeeds, every layer reporting to obs.
func closedStack(tb testing.TB, obs observe.Observer) rampart.Service[int, int] {
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: obs})
	require.NoError(tb, err)
	retried, err := retry.NewLayer(retry.Config[int, int]{Name: "db", Observer: obs})
	require.NoError(tb, err)
	ok := rampart.ServiceFunc[int, int](func(_ context.Context, n int) (int, error) { return n, nil })
	return rampart.NewBuilder[int, int]().Layer(retried).Layer(circuitbreaker.NewLayer[int, int](br, nil)).Service(ok)
}

// BenchmarkClosedSuccess is a successful call through a retry layer and a
// Closed breaker, without an observer and with the slog and OpenTelemetry
// observers attached: an observer may add at most 15ns and no allocation
// to it (the figures are in bench/README.md, "Observability cost").
func BenchmarkClosedSuccess(b *testing.B) {
	for _, o := range observers(b) {
		b.Run(o.name, func(b *testing.B) {
			svc := closedStack(b, o.obs)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, _ = svc.Call(ctx, 1)
			}
		})
	}
}

func TestObserver_EV1_ClosedSuccessAllocatesNothing(t *testing.T) {
	for _, o := range observers(t) {
		t.Run(o.name, func(t *testing.T) {
			svc := closedStack(t, o.obs)
			ctx := context.Background()
			require.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, 1) }))
		})
	}
}

// BenchmarkObserve is the cost of one event in each observer: what a
// layer pays for each thing it reports. A breaker's success is reported
// once per call; a refusal by a limit is a rarer event.
func BenchmarkObserve(b *testing.B) {
	for _, e := range []observe.Event{
		{Source: observe.Breaker, Name: "db", Kind: observe.Success},
		{Source: observe.Concurrency, Name: "pool", Kind: observe.Refused, Err: context.DeadlineExceeded},
	} {
		for _, o := range observers(b)[1:] {
			b.Run(e.Kind.String()+"/"+o.name, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					o.obs.Observe(ctx, e)
				}
			})
		}
	}
}

// BenchmarkClosedSuccessParallel is BenchmarkClosedSuccess from every P
// at once: the observers' shared state must not make parallel calls
// contend.
func BenchmarkClosedSuccessParallel(b *testing.B) {
	for _, o := range observers(b) {
		b.Run(o.name, func(b *testing.B) {
			svc := closedStack(b, o.obs)
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
