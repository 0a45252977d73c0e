// Package quickstart holds the README's first screen as an example that
// CI compiles and runs: an HTTP client with a circuit breaker, retries
// within a retry budget, a per-attempt timeout, and Prometheus metrics.
package quickstart_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/rampartotel"
)

func Example() {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "hello")
	}))
	defer backend.Close()

	// Metrics: rampart's events as OpenTelemetry metrics, served for
	// Prometheus on /metrics.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		log.Fatal(err)
	}
	metrics, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	// One breaker and one retry budget per dependency, shared by its clients.
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "backend", Observer: metrics})
	if err != nil {
		log.Fatal(err)
	}
	retries, err := budget.New(budget.Config{}) // retries: 20% of recent requests + 10/s
	if err != nil {
		log.Fatal(err)
	}
	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
		Breaker:        br,
		Retry:          ramparthttp.RetryConfig{MaxAttempts: 3, Budget: retries, Observer: metrics},
		AttemptTimeout: 2 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: tr}

	resp, err := client.Get(backend.URL)
	if err != nil {
		log.Fatal(err) // an open breaker: errors.Is(err, circuitbreaker.ErrOpen)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body), br.State().State)
	// Output: 200 OK hello closed
}
