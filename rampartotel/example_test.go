package rampartotel_test

import (
	"context"
	"errors"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartotel"
)

// A breaker named "db" trips after two failures and refuses the third
// call; its calls by outcome, its transition and its state are metrics, read here with a
// ManualReader (a Prometheus exporter or an OTLP reader in a program).
func Example() {
	reader := sdkmetric.NewManualReader()
	obs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		panic(err)
	}
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 2}, Observer: obs})
	if err != nil {
		panic(err)
	}
	down := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		return "", errors.New("connection refused")
	})
	svc := circuitbreaker.NewLayer[string, string](br, nil).Wrap(down)
	for range 3 {
		_, _ = svc.Call(context.Background(), "select 1")
	}

	calls := map[string]int64{} // rampart.breaker.calls by outcome
	var transitions, states []string
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				if st, ok := p.Attributes.Value(rampartotel.KeyBreakerState); ok { // breakers by state
					if p.Value == 1 {
						states = append(states, fmt.Sprintf("%s: %s", m.Name, st.AsString()))
					}
					continue
				}
				if outcome, ok := p.Attributes.Value(rampartotel.KeyOutcome); ok {
					calls[outcome.AsString()] = p.Value
					continue
				}
				from, _ := p.Attributes.Value(rampartotel.KeyBreakerFrom)
				to, _ := p.Attributes.Value(rampartotel.KeyBreakerTo)
				if p.Value > 0 { // a breaker's own transitions are there at zero from its creation
					transitions = append(transitions, fmt.Sprintf("%s %s→%s: %d", m.Name, from.AsString(), to.AsString(), p.Value))
				}
			}
		}
	}
	for _, line := range append(transitions, states...) {
		fmt.Println(line)
	}
	for _, outcome := range []string{"success", "failure", "ignored", "rejected"} {
		fmt.Printf("rampart.breaker.calls %s: %d\n", outcome, calls[outcome])
	}
	// Output:
	// rampart.breaker.transitions closed→open: 1
	// rampart.breaker.state: open
	// rampart.breaker.calls success: 0
	// rampart.breaker.calls failure: 2
	// rampart.breaker.calls ignored: 0
	// rampart.breaker.calls rejected: 1
}
