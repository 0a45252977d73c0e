package rampartotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/inspect"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/rampartotel"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// newObserver returns an Observer recording into a ManualReader.
func newObserver(t *testing.T) (*rampartotel.Observer, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	obs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	return obs, reader
}

// collect returns each data point read from reader as
// "name{attributes}" → its value (sums and gauges) or count (histograms),
// and each histogram's sum as "name{attributes} sum". Units are checked
// against want units.
func collect(t *testing.T, reader *sdkmetric.ManualReader) (points map[string]float64, units map[string]string) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	points, units = map[string]float64{}, map[string]string{}
	key := func(name string, set attribute.Set) string {
		return name + "{" + set.Encoded(attribute.DefaultEncoder()) + "}"
	}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, rampartotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			units[m.Name] = m.Unit
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.Equal(t, m.Name != "rampart.breaker.state", d.IsMonotonic, m.Name)
				for _, p := range d.DataPoints {
					points[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Sum[float64]:
				require.True(t, d.IsMonotonic)
				for _, p := range d.DataPoints {
					points[key(m.Name, p.Attributes)] = p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					points[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					points[key(m.Name, p.Attributes)] = float64(p.Count)
					points[key(m.Name, p.Attributes)+" sum"] = p.Sum
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					points[key(m.Name, p.Attributes)] = float64(p.Count)
					points[key(m.Name, p.Attributes)+" sum"] = float64(p.Sum)
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return points, units
}

func TestObserver_EV11_MetricsOfEachEvent(t *testing.T) {
	obs, reader := newObserver(t)
	ctx := context.Background()
	errDown := errors.New("down")
	open := &circuitbreaker.OpenError{Name: "db"}
	for _, e := range []observe.Event{
		{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "closed", To: "open", Err: errDown},
		{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "open", To: "half-open"},
		{Source: observe.Retry, Name: "api", Kind: observe.Retrying, Attempt: 2, Duration: 100 * time.Millisecond, Err: errDown},
		{Source: observe.Retry, Name: "api", Kind: observe.Retrying, Attempt: 3, Duration: 300 * time.Millisecond, Err: &timeout.Error{After: time.Second}},
		{Source: observe.Retry, Name: "api", Kind: observe.Retrying, Attempt: 2, Duration: 100 * time.Millisecond},
		{Source: observe.Retry, Name: "api", Kind: observe.RetryEnd, Attempt: 3, Err: retry.ErrMaxAttempts},
		{Source: observe.Retry, Name: "api", Kind: observe.RetryEnd, Attempt: 2},
		{Source: observe.Retry, Name: "api", Kind: observe.RetryEnd, Attempt: 1, Err: open},
		{Source: observe.Retry, Name: "api", Kind: observe.RetryEnd, Attempt: 1, Err: retry.ErrBudgetExhausted},
		{Source: observe.Retry, Name: "api", Kind: observe.RetryEnd, Attempt: 2, Err: context.Canceled},
		{Source: observe.Budget, Name: "b", Kind: observe.BudgetRefused},
		{Source: observe.Budget, Name: "b", Kind: observe.BudgetRefused},
		{Source: observe.Timeout, Name: "t", Kind: observe.TimeoutFired, Duration: time.Second},
		{Source: observe.Hedge, Name: "h", Kind: observe.HedgeSent, Attempt: 2, Duration: 10 * time.Millisecond},
		{Source: observe.Hedge, Name: "h", Kind: observe.HedgeWon, Attempt: 2},
		{Source: observe.Hedge, Name: "h", Kind: observe.HedgeWon, Attempt: 1},
		{Source: observe.Concurrency, Name: "pool", Kind: observe.Refused, Err: errDown},
		{Source: observe.Concurrency, Name: "pool", Kind: observe.Refused, Duration: 250 * time.Millisecond, Err: context.DeadlineExceeded},
		{Source: observe.Concurrency, Name: "pool", Kind: observe.Queued, Duration: 500 * time.Millisecond},
		{Source: observe.RateLimit, Name: "rl", Kind: observe.Refused, Err: errDown},
		{Source: observe.LoadShed, Name: "ls", Kind: observe.Refused, Err: errDown},
		{Source: observe.Fallback, Name: "f", Kind: observe.FallbackUsed, Err: errDown},
		{Source: observe.Coalesce, Name: "c", Kind: observe.Joined},
		{Source: observe.Breaker, Name: "db", Kind: observe.Success},
		{Source: observe.Breaker, Name: "db", Kind: observe.Success, Duration: 20 * time.Millisecond},
		{Source: observe.Breaker, Name: "db", Kind: observe.Failure, Err: errDown},
		{Source: observe.Breaker, Name: "db", Kind: observe.Ignored, Err: context.Canceled},
		{Source: observe.Breaker, Name: "db", Kind: observe.Rejected, Err: open},
		{Source: observe.Breaker, Name: "db", Kind: observe.Rejected, Err: open},
		{Source: observe.Breaker, Name: "other", Kind: observe.Success},
	} {
		obs.Observe(ctx, e)
	}
	points, units := collect(t, reader)
	dropStateTime(points)
	require.Equal(t, withZeroTransitions(map[string]float64{
		"rampart.breaker.transitions{rampart.breaker.from=closed,rampart.breaker.to=open,rampart.layer=circuitbreaker,rampart.name=db}":    1,
		"rampart.breaker.transitions{rampart.breaker.from=open,rampart.breaker.to=half-open,rampart.layer=circuitbreaker,rampart.name=db}": 1,
		"rampart.breaker.state{rampart.breaker.state=closed,rampart.layer=circuitbreaker,rampart.name=db}":                                 0,
		"rampart.breaker.state{rampart.breaker.state=open,rampart.layer=circuitbreaker,rampart.name=db}":                                   0,
		"rampart.breaker.state{rampart.breaker.state=half-open,rampart.layer=circuitbreaker,rampart.name=db}":                              1,
		"rampart.breaker.state{rampart.breaker.state=forced-open,rampart.layer=circuitbreaker,rampart.name=db}":                            0,
		"rampart.breaker.state{rampart.breaker.state=forced-closed,rampart.layer=circuitbreaker,rampart.name=db}":                          0,
		"rampart.breaker.state{rampart.breaker.state=closed,rampart.layer=circuitbreaker,rampart.name=other}":                              1, // calls, no transition
		"rampart.breaker.state{rampart.breaker.state=open,rampart.layer=circuitbreaker,rampart.name=other}":                                0,
		"rampart.breaker.state{rampart.breaker.state=half-open,rampart.layer=circuitbreaker,rampart.name=other}":                           0,
		"rampart.breaker.state{rampart.breaker.state=forced-open,rampart.layer=circuitbreaker,rampart.name=other}":                         0,
		"rampart.breaker.state{rampart.breaker.state=forced-closed,rampart.layer=circuitbreaker,rampart.name=other}":                       0,
		"rampart.retry.retries{rampart.layer=retry,rampart.name=api,rampart.retry.reason=error}":                                           1,
		"rampart.retry.retries{rampart.layer=retry,rampart.name=api,rampart.retry.reason=timeout}":                                         1,
		"rampart.retry.retries{rampart.layer=retry,rampart.name=api,rampart.retry.reason=response}":                                        1,
		"rampart.retry.delay{rampart.layer=retry,rampart.name=api}":                                                                        3,
		"rampart.retry.delay{rampart.layer=retry,rampart.name=api} sum":                                                                    0.5,
		"rampart.retry.ends{rampart.layer=retry,rampart.name=api,rampart.retry.stop=max_attempts}":                                         1,
		"rampart.retry.ends{rampart.layer=retry,rampart.name=api,rampart.retry.stop=done}":                                                 1,
		"rampart.retry.ends{rampart.layer=retry,rampart.name=api,rampart.retry.stop=breaker_open}":                                         1,
		"rampart.retry.ends{rampart.layer=retry,rampart.name=api,rampart.retry.stop=budget}":                                               1,
		"rampart.retry.ends{rampart.layer=retry,rampart.name=api,rampart.retry.stop=canceled}":                                             1,
		"rampart.retry.attempts{rampart.layer=retry,rampart.name=api,rampart.retry.stop=max_attempts}":                                     1,
		"rampart.retry.attempts{rampart.layer=retry,rampart.name=api,rampart.retry.stop=max_attempts} sum":                                 3,
		"rampart.retry.attempts{rampart.layer=retry,rampart.name=api,rampart.retry.stop=done}":                                             1,
		"rampart.retry.attempts{rampart.layer=retry,rampart.name=api,rampart.retry.stop=done} sum":                                         2,
		"rampart.retry.attempts{rampart.layer=retry,rampart.name=api,rampart.retry.stop=breaker_open}":                                     1,
		"rampart.retry.attempts{rampart.layer=retry,rampart.name=api,rampart.retry.stop=breaker_open} sum":                                 1,
		"rampart.retry.attempts{rampart.layer=retry,rampart.name=api,rampart.retry.stop=budget}":                                           1,
		"rampart.retry.attempts{rampart.layer=retry,rampart.name=api,rampart.retry.stop=budget} sum":                                       1,
		"rampart.retry.attempts{rampart.layer=retry,rampart.name=api,rampart.retry.stop=canceled}":                                         1,
		"rampart.retry.attempts{rampart.layer=retry,rampart.name=api,rampart.retry.stop=canceled} sum":                                     2,
		"rampart.budget.refusals{rampart.layer=budget,rampart.name=b}":                                                                     2,
		"rampart.timeout.fired{rampart.layer=timeout,rampart.name=t}":                                                                      1,
		"rampart.hedge.sent{rampart.layer=hedge,rampart.name=h}":                                                                           1,
		"rampart.hedge.wins{rampart.hedge.winner=hedge,rampart.layer=hedge,rampart.name=h}":                                                1,
		"rampart.hedge.wins{rampart.hedge.winner=original,rampart.layer=hedge,rampart.name=h}":                                             1,
		"rampart.limit.refusals{rampart.layer=concurrency,rampart.name=pool}":                                                              2,
		"rampart.limit.refusals{rampart.layer=ratelimit,rampart.name=rl}":                                                                  1,
		"rampart.limit.refusals{rampart.layer=loadshed,rampart.name=ls}":                                                                   1,
		"rampart.limit.wait{rampart.layer=concurrency,rampart.limit.admitted=false,rampart.name=pool}":                                     1,
		"rampart.limit.wait{rampart.layer=concurrency,rampart.limit.admitted=false,rampart.name=pool} sum":                                 0.25,
		"rampart.limit.wait{rampart.layer=concurrency,rampart.limit.admitted=true,rampart.name=pool}":                                      1,
		"rampart.limit.wait{rampart.layer=concurrency,rampart.limit.admitted=true,rampart.name=pool} sum":                                  0.5,
		"rampart.fallback.uses{rampart.layer=fallback,rampart.name=f}":                                                                     1,
		"rampart.coalesce.joins{rampart.layer=coalesce,rampart.name=c}":                                                                    1,
		"rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome=success}":                                      2,
		"rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome=failure}":                                      1,
		"rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome=ignored}":                                      1,
		"rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome=rejected}":                                     2,
		"rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=other,rampart.outcome=success}":                                   1,
		"rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=other,rampart.outcome=failure}":                                   0,
		"rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=other,rampart.outcome=ignored}":                                   0,
		"rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=other,rampart.outcome=rejected}":                                  0,
		"rampart.breaker.duration{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome=success}":                                   1,
		"rampart.breaker.duration{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome=success} sum":                               0.02,
	}, "db", "other"), points)
	require.Equal(t, map[string]string{
		"rampart.breaker.transitions": "{transition}",
		"rampart.breaker.state":       "{breaker}",
		"rampart.breaker.state.time":  "s",
		"rampart.retry.retries":       "{retry}",
		"rampart.retry.delay":         "s",
		"rampart.retry.ends":          "{call}",
		"rampart.retry.attempts":      "{attempt}",
		"rampart.budget.refusals":     "{withdrawal}",
		"rampart.timeout.fired":       "{call}",
		"rampart.hedge.sent":          "{request}",
		"rampart.hedge.wins":          "{call}",
		"rampart.limit.refusals":      "{call}",
		"rampart.limit.wait":          "s",
		"rampart.fallback.uses":       "{call}",
		"rampart.coalesce.joins":      "{call}",
		"rampart.breaker.calls":       "{call}",
		"rampart.breaker.duration":    "s",
	}, units)
}

// A retry layer over a breaker: the retries and the rejection by the open
// breaker are span events of the call's span, and metrics count them.
func TestObserver_EV11_SpanEventsAndMetricsFromAStack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs, reader := newObserver(t)
		spans := tracetest.NewSpanRecorder()
		tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")

		errDown := errors.New("down")
		down := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", errDown })
		br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 2}, Observer: obs})
		require.NoError(t, err)
		backoff, err := retry.NewConstant(10 * time.Millisecond)
		require.NoError(t, err)
		retried, err := retry.NewLayer(retry.Config[string, string]{Backoff: backoff, Name: "db", Observer: obs})
		require.NoError(t, err)
		svc := rampart.NewBuilder[string, string]().Layer(retried).Layer(circuitbreaker.NewLayer[string, string](br, nil)).Service(down)

		ctx, span := tracer.Start(context.Background(), "call")
		_, err = svc.Call(ctx, "q")
		span.End()
		require.ErrorIs(t, err, circuitbreaker.ErrOpen)

		ended := spans.Ended()
		require.Len(t, ended, 1)
		var got []string
		for _, ev := range ended[0].Events() {
			set := attribute.NewSet(ev.Attributes...)
			got = append(got, fmt.Sprint(ev.Name, " ", set.Encoded(attribute.DefaultEncoder())))
		}
		require.Equal(t, []string{
			"rampart.retry.retrying rampart.attempt=2,rampart.duration=0.01,rampart.error=down,rampart.name=db",
			"rampart.retry.retrying rampart.attempt=3,rampart.duration=0.01,rampart.error=down,rampart.name=db",
			"rampart.circuitbreaker.rejected rampart.error=" + err.Error() + ",rampart.name=db",
			"rampart.retry.retry-end rampart.attempt=3,rampart.error=" + err.Error() + ",rampart.name=db",
		}, got)

		points, _ := collect(t, reader)
		require.Equal(t, float64(2), points["rampart.retry.retries{rampart.layer=retry,rampart.name=db,rampart.retry.reason=error}"])
		require.Equal(t, float64(1), points["rampart.retry.ends{rampart.layer=retry,rampart.name=db,rampart.retry.stop=breaker_open}"])
		require.Equal(t, float64(1), points["rampart.breaker.transitions{rampart.breaker.from=closed,rampart.breaker.to=open,rampart.layer=circuitbreaker,rampart.name=db}"])
		require.Equal(t, float64(1), points["rampart.breaker.state{rampart.breaker.state=open,rampart.layer=circuitbreaker,rampart.name=db}"])
		require.Equal(t, float64(2), points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome=failure}"])
		require.Equal(t, float64(1), points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome=rejected}"])
	})
}

func TestObserver_EV11_NoSpanEvents(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")
	obs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(), NoSpanEvents: true})
	require.NoError(t, err)
	ctx, span := tracer.Start(context.Background(), "call")
	obs.Observe(ctx, observe.Event{Source: observe.Timeout, Kind: observe.TimeoutFired, Duration: time.Second})
	span.End()
	require.Empty(t, spans.Ended()[0].Events())
}

// Recording an event allocates nothing in the Observer once its attribute
// set is built (the SDK's aggregation included).
func TestObserver_EV11_NoAllocationPerEvent(t *testing.T) {
	obs, _ := newObserver(t)
	ctx := context.Background()
	e := observe.Event{Source: observe.Concurrency, Name: "pool", Kind: observe.Refused, Err: errors.New("full")}
	obs.Observe(ctx, e)
	require.Zero(t, testing.AllocsPerRun(100, func() { obs.Observe(ctx, e) }))
}

// Many goroutines report events of many layers while metrics are read:
// no race, and every event is counted.
func TestObserver_EV11_ConcurrentEventsAllCounted(t *testing.T) {
	obs, reader := newObserver(t)
	const goroutines, events = 8, 500
	done := make(chan error, 1)
	go func() {
		var err error
		for range 20 {
			var rm metricdata.ResourceMetrics
			err = errors.Join(err, reader.Collect(context.Background(), &rm))
		}
		done <- err
	}()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			name := fmt.Sprint("pool", g%4)
			for range events {
				obs.Observe(context.Background(), observe.Event{Source: observe.Concurrency, Name: name, Kind: observe.Refused})
				obs.Observe(context.Background(), observe.Event{Source: observe.Breaker, Name: name, Kind: observe.Success})
			}
		})
	}
	wg.Wait()
	require.NoError(t, <-done)
	points, _ := collect(t, reader)
	for i := range 4 {
		require.Equal(t, float64(2*events), points[fmt.Sprintf("rampart.limit.refusals{rampart.layer=concurrency,rampart.name=pool%d}", i)])
		require.Equal(t, float64(2*events), points[fmt.Sprintf("rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=pool%d,rampart.outcome=success}", i)])
	}
}

// dropStateTime removes the rampart.breaker.state.time points, which
// the tests of time check on their own.
func dropStateTime(points map[string]float64) {
	for k := range points {
		if strings.HasPrefix(k, "rampart.breaker.state.time{") {
			delete(points, k)
		}
	}
}

// withZeroTransitions adds to want the transitions a breaker makes by
// itself, at zero, for each breaker name not already in want.
func withZeroTransitions(want map[string]float64, names ...string) map[string]float64 {
	for _, name := range names {
		for _, ft := range [][2]string{{"closed", "open"}, {"open", "half-open"}, {"half-open", "closed"}, {"half-open", "open"}} {
			k := "rampart.breaker.transitions{rampart.breaker.from=" + ft[0] + ",rampart.breaker.to=" + ft[1] + ",rampart.layer=circuitbreaker,rampart.name=" + name + "}"
			if _, ok := want[k]; !ok {
				want[k] = 0
			}
		}
	}
	return want
}

// Close stops the metrics and drops later events, of a breaker bound
// before it, of one created after it and of any other layer; a second
// Close does nothing.
func TestObserver_EV11_Close(t *testing.T) {
	obs, reader := newObserver(t)
	b, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Observer: obs})
	require.NoError(t, err)
	p, _ := b.TryAcquire()
	p.Success()
	retrying := observe.Event{Source: observe.Retry, Name: "db", Kind: observe.Retrying, Attempt: 2}
	obs.Observe(context.Background(), retrying)
	points, _ := collect(t, reader)
	require.Equal(t, 1.0, points[point("rampart.breaker.calls", "db", "rampart.outcome=success")])
	require.Equal(t, 1.0, points["rampart.retry.retries{rampart.layer=retry,rampart.name=db,rampart.retry.reason=response}"])

	require.NoError(t, obs.Close())
	require.NoError(t, obs.Close())
	p, _ = b.TryAcquire()
	p.Success()
	late, err := circuitbreaker.New(circuitbreaker.Config{Name: "late", Observer: obs})
	require.NoError(t, err)
	p, _ = late.TryAcquire()
	p.Failure(errors.New("down"))
	obs.Observe(context.Background(), retrying)
	points, _ = collect(t, reader)
	require.Equal(t, map[string]float64{
		// The SDK keeps reporting what a synchronous instrument recorded
		// (cumulative sums), unchanged: the later retry was dropped.
		"rampart.retry.retries{rampart.layer=retry,rampart.name=db,rampart.retry.reason=response}": 1,
		"rampart.retry.delay{rampart.layer=retry,rampart.name=db}":                                 1,
		"rampart.retry.delay{rampart.layer=retry,rampart.name=db} sum":                             0,
	}, points, "no breaker series after Close: the callback is unregistered")
	runtime.KeepAlive(b)
}

// Scenarios from fault reports against other libraries, in our words.

// The OpenTelemetry SDK caps each instrument's attribute sets (2,000 by
// default) and folds the rest into one overflow point: a metric labelled
// per tenant then loses most tenants' outcomes. A Group's breakers,
// aggregated by default, make one set of series whatever the tenants, so
// nothing reaches the cap; with per-key series past the cap, the SDK's
// overflow point still holds the rest, so the totals stay exact.
func TestScenario_EV14_SDKCardinalityLimit(t *testing.T) {
	const tenants = 5000
	for _, keySeries := range []int{0, 300} {
		t.Run("KeySeries="+strconv.Itoa(keySeries), func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithCardinalityLimit(100))
			obs, err := rampartotel.New(rampartotel.Config{MeterProvider: mp, KeySeries: keySeries})
			require.NoError(t, err)
			g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Name: "tenants", Observer: obs}})
			require.NoError(t, err)
			layer, err := circuitbreaker.NewGroupLayer[string, string](g, func(key string) string { return key }, nil)
			require.NoError(t, err)
			svc := layer.Wrap(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", errors.New("down") }))
			for i := range tenants {
				_, _ = svc.Call(context.Background(), "t"+strconv.Itoa(i))
			}
			points, _ := collect(t, reader)
			var calls float64
			overflow := false
			for k, v := range points {
				if strings.HasPrefix(k, "rampart.breaker.calls{") {
					calls += v
					overflow = overflow || strings.Contains(k, "otel.metric.overflow=true")
				}
			}
			require.Equal(t, keySeries > 100, overflow, "the SDK folds only what passes its cap")
			require.Equal(t, float64(tenants), calls, "every call counted once, overflow included")
		})
	}
}

// A metrics integration registered twice counted each breaker call twice,
// and a rejection seen by three layers was counted three times. Here a
// request retried over a breaker is counted once per attempt, whatever the
// observers joined: an attempt that failed and tripped the breaker, then
// the retry the open breaker refused.
func TestScenario_EV12_RetriedRequestCountedOncePerAttempt(t *testing.T) {
	obs, reader := newObserver(t)
	log, err := observe.NewLog(observe.LogConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	both := observe.Join(log, obs)
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1}, Observer: both})
	require.NoError(t, err)
	retried, err := retry.NewLayer(retry.Config[int, int]{Name: "db", Observer: both, Backoff: noBackoff(t), Budget: budget.Always})
	require.NoError(t, err)
	down := rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, errors.New("down") })
	svc := rampart.NewBuilder[int, int]().Layer(retried).Layer(circuitbreaker.NewLayer[int, int](br, nil)).Service(down)
	_, err = svc.Call(context.Background(), 1)
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	points, _ := collect(t, reader)
	calls := func(outcome string) float64 {
		return points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome="+outcome+"}"]
	}
	require.Equal(t, []float64{0, 1, 0, 1}, []float64{calls("success"), calls("failure"), calls("ignored"), calls("rejected")})
	require.Equal(t, 1.0, points["rampart.retry.ends{rampart.layer=retry,rampart.name=db,rampart.retry.stop=breaker_open}"])
}

// noBackoff is a backoff that does not wait.
func noBackoff(t *testing.T) retry.Backoff {
	b, err := retry.NewConstant(0)
	require.NoError(t, err)
	return b
}

// A retry loop that stops because its request is already a retry
// upstream (a trusted peer's attempt 2) is counted under that reason, not
// as the caller's cancellation: the operator sees why the hop made one
// attempt.
func TestScenario_EV2_UpstreamRetryStopIsNamed(t *testing.T) {
	obs, reader := newObserver(t)
	retried, err := retry.NewLayer(retry.Config[int, int]{Name: "db", Observer: obs, Backoff: noBackoff(t), Budget: budget.Always})
	require.NoError(t, err)
	calls := 0
	svc := retried.Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) {
		calls++
		return 0, errors.New("down")
	}))
	_, err = svc.Call(rampart.WithAttempt(context.Background(), 2), 1)
	require.ErrorIs(t, err, retry.ErrUpstreamRetry)
	require.Equal(t, 1, calls)
	points, _ := collect(t, reader)
	require.Equal(t, 1.0, points["rampart.retry.ends{rampart.layer=retry,rampart.name=db,rampart.retry.stop=upstream_retry}"])
	require.Zero(t, points["rampart.retry.ends{rampart.layer=retry,rampart.name=db,rampart.retry.stop=canceled}"])
}

// A HalfOpen probe over HTTP whose body the caller never closes (an
// instrumentation's span that never ends, in otelhttp's reports): the
// metrics and the live page say what the breaker did at each step, from
// the same events. While the body is open the probe holds its slot and
// the next request is refused (rejected 3: two while open, one behind the
// probe); when BodyLease passes the probe counts as the success its
// headers were, once, and the breaker is closed on both; closing the body
// afterwards changes nothing.
func TestScenario_HT12_UnclosedProbeBodyCountedOnceOnEveryView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs, reader := newObserver(t)
		reg, err := inspect.New(inspect.Config{})
		require.NoError(t, err)
		br, err := circuitbreaker.New(circuitbreaker.Config{Name: "api", Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Second,
			Observer: observe.Join(obs, reg.Observer())})
		require.NoError(t, err)
		reg.AddBreaker(br)
		statuses := []int{503, 503, 200, 200}
		sent := 0
		base := roundTripper(func(*http.Request) (*http.Response, error) {
			code := statuses[sent]
			sent++
			return &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("body"))}, nil
		})
		rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Base: base, Breaker: br, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})
		require.NoError(t, err)
		get := func() (*http.Response, error) {
			return rt.RoundTrip(httptest.NewRequest(http.MethodGet, "http://api.test/", nil))
		}
		for range 2 {
			resp, err := get()
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
		}
		for range 2 {
			_, err := get()
			require.ErrorIs(t, err, circuitbreaker.ErrOpen)
		}
		time.Sleep(time.Second)
		probe, err := get()
		require.NoError(t, err)
		_, err = get()
		require.ErrorIs(t, err, circuitbreaker.ErrOpen, "the open probe body holds the slot")

		views := func() (metrics, page []float64) {
			points, _ := collect(t, reader)
			for _, o := range []string{"success", "failure", "rejected"} {
				metrics = append(metrics, points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=api,rampart.outcome="+o+"}"])
			}
			for _, s := range []string{"closed", "half-open"} {
				metrics = append(metrics, points[point("rampart.breaker.state", "api", "rampart.breaker.state="+s)])
			}
			st := reg.Status(context.Background()).Breakers[0]
			page = []float64{float64(st.Rejected), boolFloat(st.State == "closed"), boolFloat(st.State == "half-open"), float64(st.ProbesInFlight)}
			return metrics, page
		}
		m, p := views()
		require.Equal(t, []float64{0, 2, 3, 0, 1}, m, "success, failure, rejected, closed, half-open")
		require.Equal(t, []float64{3, 0, 1, 1}, p, "rejected, closed, half-open, probes in flight")

		time.Sleep(ramparthttp.DefaultBodyLease)
		synctest.Wait()
		m, p = views()
		require.Equal(t, []float64{1, 2, 3, 1, 0}, m)
		require.Equal(t, []float64{3, 1, 0, 0}, p)
		require.NoError(t, probe.Body.Close())
		m2, p2 := views()
		require.Equal(t, m, m2, "a late close changes nothing")
		require.Equal(t, p, p2)
		require.Equal(t, 3, sent)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// A counter born at its first increment hides that increment from
// Prometheus (rate and increase need an earlier sample: a process that
// restarts and at once refuses retries shows nothing). The budget's
// refusals, which the alert rules read, exist at zero from the budget's
// creation, and then count every refusal.
func TestScenario_EV3_BudgetRefusalsExistAtZero(t *testing.T) {
	obs, reader := newObserver(t)
	b, err := budget.New(budget.Config{Name: "backend", Observer: obs, MinPerSecond: 1, Ratio: 0.000001})
	require.NoError(t, err)
	key := "rampart.budget.refusals{rampart.layer=budget,rampart.name=backend}"
	points, _ := collect(t, reader)
	v, ok := points[key]
	require.True(t, ok, "the series exists before any refusal")
	require.Zero(t, v)
	refused := 0
	for range 20 {
		if !b.Withdraw() {
			refused++
		}
	}
	require.Positive(t, refused)
	points, _ = collect(t, reader)
	require.Equal(t, float64(refused), points[key])
}

// A hedged GET whose original is slow and whose copy answers at once:
// the caller gets one success; the breaker counts both attempts it saw
// (the winner a success, the cancelled loser ignored, since the hedge
// gave it up, not the server), and the hedge's own metrics, which
// ramparthttp's HedgeConfig now names and observes as rampartgrpc's does,
// say one copy was sent and it won.
func TestScenario_EV5_HedgedRequestCountedOnEachLayer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs, reader := newObserver(t)
		br, err := circuitbreaker.New(circuitbreaker.Config{Name: "api", Observer: obs})
		require.NoError(t, err)
		var copies atomic.Int32
		base := roundTripper(func(r *http.Request) (*http.Response, error) {
			if copies.Add(1) == 1 {
				select { // the original: slow, gives up when the hedge wins
				case <-time.After(time.Second):
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
		})
		rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Base: base, Breaker: br,
			Retry: ramparthttp.RetryConfig{MaxAttempts: 1},
			Hedge: &ramparthttp.HedgeConfig{Budget: budget.Always, Delay: 10 * time.Millisecond, Name: "api", Observer: obs}})
		require.NoError(t, err)
		resp, err := rt.RoundTrip(httptest.NewRequest(http.MethodGet, "http://api.test/", nil))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		synctest.Wait()

		points, _ := collect(t, reader)
		calls := func(o string) float64 {
			return points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=api,rampart.outcome="+o+"}"]
		}
		require.Equal(t, []float64{1, 0, 1, 0}, []float64{calls("success"), calls("failure"), calls("ignored"), calls("rejected")})
		require.Equal(t, 1.0, points["rampart.hedge.sent{rampart.layer=hedge,rampart.name=api}"])
		require.Equal(t, 1.0, points["rampart.hedge.wins{rampart.hedge.winner=hedge,rampart.layer=hedge,rampart.name=api}"])
		require.Equal(t, int32(2), copies.Load())
	})
}

// Errors whose text is unique to each call (an ID, a URL in the message)
// never become metric attributes: 500 calls failing with 500 distinct
// errors, retried, make exactly as many series as one error would, so no
// backend's cardinality limit folds them into an overflow point.
func TestScenario_EV14_DistinctErrorsMakeNoSeries(t *testing.T) {
	series := func(calls int) (int, map[string]float64) {
		obs, reader := newObserver(t)
		br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1000000}, Observer: obs})
		require.NoError(t, err)
		retried, err := retry.NewLayer(retry.Config[int, int]{Name: "db", Observer: obs, Backoff: noBackoff(t), Budget: budget.Always, MaxAttempts: 2})
		require.NoError(t, err)
		svc := rampart.NewBuilder[int, int]().Layer(retried).Layer(circuitbreaker.NewLayer[int, int](br, nil)).
			Service(rampart.ServiceFunc[int, int](func(_ context.Context, i int) (int, error) {
				return 0, fmt.Errorf("request %d to /users/%d failed", i, i)
			}))
		for i := range calls {
			_, _ = svc.Call(context.Background(), i)
		}
		points, _ := collect(t, reader)
		return len(points), points
	}
	one, _ := series(1)
	many, points := series(500)
	require.Equal(t, one, many)
	require.Equal(t, 1000.0, points["rampart.breaker.calls{rampart.layer=circuitbreaker,rampart.name=db,rampart.outcome=failure}"])
	require.Equal(t, 500.0, points["rampart.retry.retries{rampart.layer=retry,rampart.name=db,rampart.retry.reason=error}"])
	require.Equal(t, 500.0, points["rampart.retry.ends{rampart.layer=retry,rampart.name=db,rampart.retry.stop=max_attempts}"])
}

// A nil or zero Observer records nothing and panics nowhere: given to a
// breaker (whose New binds it) that trips and refuses, to a group's
// breakers, to a timeout layer that fires (which calls Observe without
// binding), and joined; Close says it was not made by New.
func TestObserver_EV11_NilOrZeroRecordsNothing(t *testing.T) {
	for name, o := range map[string]*rampartotel.Observer{"nil": nil, "zero": new(rampartotel.Observer)} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for _, obs := range []observe.Observer{o, observe.Join(o, observe.Func(func(context.Context, observe.Event) {}))} {
					observetest.Exercise(t, obs)
					g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Name: "g", Observer: obs}})
					require.NoError(t, err)
					_, err = circuitbreaker.Run(t.Context(), g.Breaker("k"), func(context.Context) (int, error) { return 1, nil })
					require.NoError(t, err)
				}
				require.EqualError(t, o.Close(), "rampartotel: the Observer was not made by New")
			})
		})
	}
}
