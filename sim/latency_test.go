package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Quantiles are nearest rank and exact within the bound of distinct
// values.
func TestLatencies_SM12_Exact(t *testing.T) {
	var l latencies
	assert.Equal(t, []time.Duration{0, 0}, l.quantiles(0.5, 0.99))
	for i := 1; i <= 100; i++ {
		l.add(time.Duration(i) * time.Millisecond)
	}
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond}, l.quantiles(0.5, 0.99, 1))
	assert.Equal(t, 100*time.Millisecond, l.max)
}

// Beyond the bound, values lose low bits, so quantiles are low by less
// than 1.6%, and memory stays bounded; the maximum stays exact.
func TestLatencies_SM12_Bounded(t *testing.T) {
	var l latencies
	const n = 100_000
	for i := 1; i <= n; i++ {
		l.add(time.Duration(i) * time.Microsecond)
	}
	assert.LessOrEqual(t, len(l.counts), maxLatencyKeys)
	assert.Equal(t, n*time.Microsecond, l.max)
	q := l.quantiles(0.5, 0.99)
	for i, want := range []time.Duration{n / 2 * time.Microsecond, n * 99 / 100 * time.Microsecond} {
		assert.LessOrEqual(t, q[i], want)
		assert.Greater(t, q[i], want-want/64, "within 1/64 below")
	}
}
