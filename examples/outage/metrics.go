package main

import (
	"fmt"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartotel"
)

// serveMetrics starts serving the rampart client's metrics on addr at
// /metrics, in Prometheus's text format, through the OpenTelemetry
// Prometheus exporter, and returns the observer to give its layers, the
// address it listens on and a function that stops the server.
func serveMetrics(addr string) (observe.Observer, string, func(), error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, "", nil, err
	}
	obs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))})
	if err != nil {
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", nil, fmt.Errorf("-metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed when stopped
	return obs, ln.Addr().String(), func() { srv.Close() }, nil
}
