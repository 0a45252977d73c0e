//go:build policieswip

package circuitbreaker_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// playOutcomes records seq through b, one permit per letter: 'S' success,
// 'F' failure with errBoom. Every call must be admitted.
func playOutcomes(t *testing.T, b *circuitbreaker.Breaker, seq string) {
	t.Helper()
	for _, c := range seq {
		p, err := b.TryAcquire()
		require.NoError(t, err, "call %q of %q", c, seq)
		if c == 'S' {
			p.Success()
		} else {
			p.Failure(errBoom)
		}
	}
}

// callTaking records one success that took exactly d (inside a bubble).
func callTaking(t *testing.T, b *circuitbreaker.Breaker, d time.Duration) {
	t.Helper()
	p, err := b.TryAcquire()
	require.NoError(t, err)
	time.Sleep(d)
	p.Success()
}

func TestPolicies_CB13_FailureRateDefaults(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{}})
	playOutcomes(t, b, strings.Repeat("F", 99))
	assert.Equal(t, circuitbreaker.Snapshot{Counters: circuitbreaker.Counters{Calls: 99, Failures: 99}}, b.State(),
		"MinCalls defaults to the Size, 100")

	b = newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{}})
	playOutcomes(t, b, strings.Repeat("S", 50)+strings.Repeat("F", 49)+"S")
	assert.Equal(t, circuitbreaker.Snapshot{Counters: circuitbreaker.Counters{Calls: 100, Failures: 49}}, b.State())
	playOutcomes(t, b, "F") // the first S leaves the 100-call window: 50 of 100
	assert.Equal(t, circuitbreaker.Open, b.State().State, "the default Ratio is one half")
}

func TestPolicies_CB13_TimeWindowDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Period: 10 * time.Second},
		}})
		time.Sleep(500 * time.Millisecond)
		playOutcomes(t, b, "S") // in the first of 10 one-second buckets
		time.Sleep(9499 * time.Millisecond)
		assert.Equal(t, circuitbreaker.Counters{Calls: 1}, b.State().Counters)
		time.Sleep(time.Millisecond) // 10s: the first bucket leaves the window
		assert.Equal(t, circuitbreaker.Counters{}, b.State().Counters)

		playOutcomes(t, b, strings.Repeat("F", 19))
		assert.Equal(t, circuitbreaker.Snapshot{Counters: circuitbreaker.Counters{Calls: 19, Failures: 19}}, b.State(),
			"MinCalls defaults to 20 for a time window")
		playOutcomes(t, b, "F")
		assert.Equal(t, circuitbreaker.Open, b.State().State)
	})
}

// A gap of exactly two windows puts the next outcome in the same bucket
// slot as an old one: the old counts must not survive it.
func TestPolicies_CB12_TimeWindowGapOfWholeWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: 2},
			Ratio:  0.5,
		}})
		time.Sleep(500 * time.Millisecond)
		playOutcomes(t, b, "F") // bucket 0
		time.Sleep(20 * time.Second)
		playOutcomes(t, b, "S") // bucket 20, the same slot as bucket 0
		assert.Equal(t, circuitbreaker.Snapshot{Counters: circuitbreaker.Counters{Calls: 1}}, b.State(),
			"a stale F would make 1 of 2 and trip")
		playOutcomes(t, b, "F")
		assert.Equal(t, circuitbreaker.Open, b.State().State)
	})
}
