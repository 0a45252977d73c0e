package rampartotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartotel"
)

// wrappedNoop is a MeterProvider of its own type that hands out the no-op
// meter, as a provider wrapper may.
type wrappedNoop struct{ noop.MeterProvider }

func (w wrappedNoop) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return w.MeterProvider.Meter(name, opts...)
}

// With a no-op meter, whoever provides it, a breaker bound to the Observer
// is not told of its successes (they cost what they cost without an
// Observer) and its rejections still become span events; without span
// events it is bound to nothing.
func TestObserver_EV16_NoopMeterTakesNoSuccesses(t *testing.T) {
	for _, mp := range []metric.MeterProvider{noop.NewMeterProvider(), &noop.MeterProvider{}, wrappedNoop{}} {
		obs, err := rampartotel.New(rampartotel.Config{MeterProvider: mp})
		require.NoError(t, err)
		bound := observe.Bind(obs, observe.Breaker, "db")
		require.NotNil(t, bound, "%T", mp)
		require.False(t, observe.Wants(bound, observe.Success), "%T", mp)
		require.False(t, observe.Wants(bound, observe.Failure), "%T", mp)
		require.True(t, observe.Wants(bound, observe.Rejected), "%T", mp)

		quiet, err := rampartotel.New(rampartotel.Config{MeterProvider: mp, NoSpanEvents: true})
		require.NoError(t, err)
		require.Nil(t, observe.Bind(quiet, observe.Breaker, "db"), "%T", mp)
	}

	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")
	obs, err := rampartotel.New(rampartotel.Config{MeterProvider: noop.NewMeterProvider()})
	require.NoError(t, err)
	sw := &circuitbreaker.Switch{}
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: obs, Switch: sw})
	require.NoError(t, err)
	svc := circuitbreaker.NewLayer[int, int](br, nil).Wrap(echo)
	ctx, span := tracer.Start(context.Background(), "call")
	_, err = svc.Call(ctx, 1)
	require.NoError(t, err)
	sw.ForceOpen(nil)
	_, err = svc.Call(ctx, 1)
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	span.End()
	var names []string
	for _, ev := range spans.Ended()[0].Events() {
		names = append(names, ev.Name)
	}
	require.Equal(t, []string{"rampart.circuitbreaker.rejected"}, names)
}

// On a recording provider, the bound breaker wants every outcome.
func TestObserver_EV16_SDKTakesEveryOutcome(t *testing.T) {
	obs, _ := newObserver(t)
	bound := observe.Bind(obs, observe.Breaker, "db")
	for _, k := range []observe.Kind{observe.Success, observe.Failure, observe.Ignored, observe.Rejected, observe.Transition} {
		require.True(t, observe.Wants(bound, k), k.String())
	}
}
