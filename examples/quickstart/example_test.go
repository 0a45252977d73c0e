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
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// The README's first screen is Example's body, so that what a new user
// copies compiles and runs.
func TestREADMEShowsExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, body, ok := strings.Cut(string(src), "func Example() {\n")
	require.True(t, ok)
	body, _, ok = strings.Cut(body, "\n}\n")
	require.True(t, ok)
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "\t// Output:") {
			continue // the example's check, not the user's code
		}
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	want := strings.Join(lines, "\n")
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(readme), "```go\n"+want+"\n```\n"),
		"README.md's install section must show examples/quickstart's Example body, without its Output line:\n%s", want)
}
