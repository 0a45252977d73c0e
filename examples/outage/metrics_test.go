package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/observe"
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
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "rampart_") {
			got = append(got, strings.TrimSpace(line))
		}
	}
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
	}, got)
}
