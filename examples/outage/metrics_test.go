package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartotel"
)

// The -metrics server exposes the events given to its observer in
// Prometheus's text format, over real loopback HTTP.
func TestMetrics_EV11_PrometheusEndpoint(t *testing.T) {
	obs, addr, stop, err := serveMetrics("127.0.0.1:0")
	require.NoError(t, err)
	defer stop()
	obs.Observe(context.Background(), observe.Event{Source: observe.Breaker, Name: "backend", Kind: observe.Transition, From: "closed", To: "open"})

	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var got []string
	stateTimes := 0
	for line := range strings.Lines(string(body)) {
		switch {
		case strings.HasPrefix(line, "rampart_breaker_state_time_seconds_total{"):
			stateTimes++ // its values are the run's real time
		case strings.HasPrefix(line, "rampart_"):
			got = append(got, strings.TrimSpace(line))
		}
	}
	require.Equal(t, 5, stateTimes, "one series per state")
	scope := `otel_scope_name="github.com/rampart-go/rampart/rampartotel",otel_scope_schema_url="",otel_scope_version="",`
	require.Equal(t, []string{
		// A breaker's series appear together, with its first event.
		`rampart_breaker_calls_total{` + scope + `rampart_layer="circuitbreaker",rampart_name="backend",rampart_outcome="failure"} 0`,
		`rampart_breaker_calls_total{` + scope + `rampart_layer="circuitbreaker",rampart_name="backend",rampart_outcome="ignored"} 0`,
		`rampart_breaker_calls_total{` + scope + `rampart_layer="circuitbreaker",rampart_name="backend",rampart_outcome="rejected"} 0`,
		`rampart_breaker_calls_total{` + scope + `rampart_layer="circuitbreaker",rampart_name="backend",rampart_outcome="success"} 0`,
		`rampart_breaker_state{` + scope + `rampart_breaker_state="closed",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_state{` + scope + `rampart_breaker_state="forced-closed",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_state{` + scope + `rampart_breaker_state="forced-open",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_state{` + scope + `rampart_breaker_state="half-open",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_state{` + scope + `rampart_breaker_state="open",rampart_layer="circuitbreaker",rampart_name="backend"} 1`,
		`rampart_breaker_transitions_total{` + scope + `rampart_breaker_from="closed",rampart_breaker_to="open",rampart_layer="circuitbreaker",rampart_name="backend"} 1`,
		// The transitions a breaker makes by itself are there from its
		// first event, at zero.
		`rampart_breaker_transitions_total{` + scope + `rampart_breaker_from="half-open",rampart_breaker_to="closed",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_transitions_total{` + scope + `rampart_breaker_from="half-open",rampart_breaker_to="open",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_transitions_total{` + scope + `rampart_breaker_from="open",rampart_breaker_to="half-open",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
	}, got)
}

// The rampart client's breaker metrics add up to the run's summary, exactly:
// the model, on synctest's clock, with the OpenTelemetry observer on a
// ManualReader.
func TestMetrics_EV12_BreakerCallsMatchTheTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		obs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
		require.NoError(t, err)
		o := short()
		o.observer = obs
		r, err := simulate(o, inMemory, io.Discard)
		require.NoError(t, err)

		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		got := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "rampart.breaker.calls" {
					continue
				}
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					outcome, _ := dp.Attributes.Value(rampartotel.KeyOutcome)
					got[outcome.AsString()] += dp.Value
				}
			}
		}
		b := r.Rampart.Breaker
		t.Logf("table: %+v; metrics: %v", b, got)
		require.Equal(t, map[string]int64{"success": b.Successes, "failure": b.Failures, "ignored": 0, "rejected": b.FailedFast}, got)
		require.Equal(t, b.Calls, got["success"]+got["failure"]+got["rejected"])
		require.Equal(t, r.Rampart.FastFails, b.FailedFast)
		require.Positive(t, b.FailedFast)
		require.Positive(t, b.Failures)
	})
}
