package rampartotel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartotel"
	"github.com/rampart-go/rampart/retry"
)

// namedObserver is an observer and the name of its sub-benchmark or
// subtest.
type namedObserver struct {
	name string
	obs  observe.Observer
}

// echo is a service whose every call succeeds with its request.
var echo = rampart.ServiceFunc[int, int](func(_ context.Context, n int) (int, error) { return n, nil })

// loopCalls is the benchmark loop of a call to svc.
func loopCalls(b *testing.B, svc rampart.Service[int, int]) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, 1)
	}
}

// observers are the ways a stack can be observed: not at all, by a log, by
// OpenTelemetry, and by both.
func observers(tb testing.TB) []namedObserver {
	log, err := observe.NewLog(observe.LogConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(tb, err)
	otelObs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))})
	require.NoError(tb, err)
	return []namedObserver{
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
	return rampart.NewBuilder[int, int]().Layer(retried).Layer(circuitbreaker.NewLayer[int, int](br, nil)).Service(echo)
}

// BenchmarkClosedSuccess is a successful call through a retry layer and a
// Closed breaker, without an observer and with the slog and OpenTelemetry
// observers attached: an observer may add at most 15ns and no allocation
// to it (the figures are in bench/README.md, "Observability cost").
func BenchmarkClosedSuccess(b *testing.B) {
	for _, o := range observers(b) {
		b.Run(o.name, func(b *testing.B) {
			svc := closedStack(b, o.obs)
			loopCalls(b, svc)
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

// breakerObservers are the observers of the breaker-alone benchmarks: none,
// the OpenTelemetry Observer on the SDK, and on the no-op MeterProvider
// (with and without span events).
func breakerObservers(tb testing.TB) []namedObserver {
	sdk, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))})
	require.NoError(tb, err)
	nop, err := rampartotel.New(rampartotel.Config{MeterProvider: noop.NewMeterProvider()})
	require.NoError(tb, err)
	nopQuiet, err := rampartotel.New(rampartotel.Config{MeterProvider: noop.NewMeterProvider(), NoSpanEvents: true})
	require.NoError(tb, err)
	return []namedObserver{
		{name: "none", obs: nil},
		{name: "otel-sdk", obs: sdk},
		{name: "otel-noop", obs: nop},
		{name: "otel-noop-nospans", obs: nopQuiet},
	}
}

// BenchmarkBreakerClosedSuccess is a successful call through a Closed
// breaker alone, by observer: what observing a breaker costs on its
// hottest path (bench/README.md, "Observability cost").
func BenchmarkBreakerClosedSuccess(b *testing.B) {
	for _, o := range breakerObservers(b) {
		b.Run(o.name, func(b *testing.B) {
			br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: o.obs})
			require.NoError(b, err)
			svc := circuitbreaker.NewLayer[int, int](br, nil).Wrap(echo)
			loopCalls(b, svc)
		})
	}
}

// openBreaker returns a breaker held open, reporting to obs.
func openBreaker(tb testing.TB, obs observe.Observer) *circuitbreaker.Breaker {
	sw := &circuitbreaker.Switch{}
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: obs, Switch: sw})
	require.NoError(tb, err)
	sw.ForceOpen(nil)
	return br
}

// BenchmarkBreakerOpenRejection is a call an open breaker refuses, by
// observer.
func BenchmarkBreakerOpenRejection(b *testing.B) {
	for _, o := range breakerObservers(b)[:2] {
		b.Run(o.name, func(b *testing.B) {
			svc := circuitbreaker.NewLayer[int, int](openBreaker(b, o.obs), nil).Wrap(echo)
			loopCalls(b, svc)
		})
	}
}

// An observed call, a Closed success or an Open rejection, allocates
// nothing, whatever the observer.
func TestObserver_EV1_ObservedBreakerCallsAllocateNothing(t *testing.T) {
	for _, o := range breakerObservers(t) {
		t.Run(o.name, func(t *testing.T) {
			br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: o.obs})
			require.NoError(t, err)
			closed := circuitbreaker.NewLayer[int, int](br, nil).Wrap(echo)
			open := circuitbreaker.NewLayer[int, int](openBreaker(t, o.obs), nil).Wrap(echo)
			ctx := context.Background()
			require.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = closed.Call(ctx, 1) }), "closed success")
			require.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = open.Call(ctx, 1) }), "open rejection")
		})
	}
}

// BenchmarkBare is the loop of the benchmarks without a call: the
// baseline bench/instructions.sh subtracts (SET=otel).
func BenchmarkBare(b *testing.B) {
	b.Run("loop", bareLoop)
}

// bareLoop is b.Loop and a counter.
func bareLoop(b *testing.B) {
	var calls int
	for b.Loop() {
		calls++
	}
	if calls != b.N {
		b.Errorf("%d calls, want %d", calls, b.N)
	}
}
