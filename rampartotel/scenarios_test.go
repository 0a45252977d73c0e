package rampartotel_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartotel"
	"github.com/rampart-go/rampart/retry"
)

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
