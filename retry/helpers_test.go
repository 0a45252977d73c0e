package retry_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/retry"
)

// stack builds retry (with a budget) outside a circuit breaker around inner.
func stack(t testing.TB, inner rampart.Service[string, string], attempts int) rampart.Service[string, string] {
	t.Helper()
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 5}})
	require.NoError(t, err)
	b, err := budget.New(budget.Config{})
	require.NoError(t, err)
	rl, err := retry.NewLayer(retry.Config[string, string]{MaxAttempts: attempts, Backoff: constant(t, ms(10)), Budget: b})
	require.NoError(t, err)
	return rampart.NewBuilder[string, string]().
		Layer(rl).
		Layer(circuitbreaker.NewLayer[string, string](br, nil)).
		Service(inner)
}
