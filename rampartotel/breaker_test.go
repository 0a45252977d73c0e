package rampartotel_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rampart-go/rampart"
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

// The state gauge reads what Breaker.State reports: an open breaker whose
// cool-down has ended is half-open (it lets the next call through as a
// probe) though it reports the transition only when that call arrives;
// the transition is counted once, as of the cool-down's end. A cool-down
// that lasts until a reset stays open.
func TestObserver_EV17_StateGaugeHalfOpenOnceTheCoolDownEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs, reader := newObserver(t)
		b, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 10 * time.Second, Observer: obs})
		require.NoError(t, err)
		forever, err := circuitbreaker.New(circuitbreaker.Config{Name: "stuck", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: rampart.Forever, Observer: obs})
		require.NoError(t, err)
		gauge := func(name string) (in map[string]float64, opened float64) {
			points, _ := collect(t, reader)
			in = map[string]float64{}
			for _, st := range []string{"closed", "open", "half-open"} {
				in[st] = points[point("rampart.breaker.state", name, "rampart.breaker.state="+st)]
			}
			return in, points[point("rampart.breaker.transitions", name, "rampart.breaker.from=open", "rampart.breaker.to=half-open")]
		}
		for _, br := range []*circuitbreaker.Breaker{b, forever} {
			p, err := br.TryAcquire()
			require.NoError(t, err)
			p.Failure(errors.New("down"))
		}

		time.Sleep(10*time.Second - time.Nanosecond)
		require.Equal(t, circuitbreaker.Open, b.State().State)
		in, opened := gauge("db")
		require.Equal(t, map[string]float64{"closed": 0, "open": 1, "half-open": 0}, in, "in the cool-down")
		require.Equal(t, 0.0, opened)

		time.Sleep(time.Nanosecond)
		require.Equal(t, circuitbreaker.HalfOpen, b.State().State)
		in, opened = gauge("db")
		require.Equal(t, map[string]float64{"closed": 0, "open": 0, "half-open": 1}, in, "the cool-down has ended, no call yet")
		require.Equal(t, 1.0, opened)
		in, _ = gauge("stuck")
		require.Equal(t, map[string]float64{"closed": 0, "open": 1, "half-open": 0}, in, "a cool-down that never ends")
		require.Equal(t, circuitbreaker.Open, forever.State().State)

		time.Sleep(5 * time.Second)
		p, err := b.TryAcquire() // the breaker reports its transition now
		require.NoError(t, err)
		in, opened = gauge("db")
		require.Equal(t, map[string]float64{"closed": 0, "open": 0, "half-open": 1}, in)
		require.Equal(t, 1.0, opened, "counted once")
		p.Success()
		in, opened = gauge("db")
		require.Equal(t, map[string]float64{"closed": 1, "open": 0, "half-open": 0}, in)
		require.Equal(t, 1.0, opened)

		points, _ := collect(t, reader)
		require.Equal(t, 10.0, points[point("rampart.breaker.state.time", "db", "rampart.breaker.state=open")])
		require.Equal(t, 5.0, points[point("rampart.breaker.state.time", "db", "rampart.breaker.state=half-open")])
		runtime.KeepAlive(forever)
	})
}
