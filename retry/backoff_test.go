package retry_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/retry"
)

// fixed returns a Rand source that always returns u.
func fixed(u float64) func() float64 { return func() float64 { return u } }

func mustExponential(t testing.TB, cfg retry.Exponential) retry.Backoff {
	t.Helper()
	b, err := retry.NewExponential(cfg)
	require.NoError(t, err)
	return b
}

func TestBackoff_RT1_ExponentialNoJitterDoublesUpToCap(t *testing.T) {
	b := mustExponential(t, retry.Exponential{Base: 100 * time.Millisecond, Max: time.Second, Jitter: retry.NoJitter})
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		assert.Equal(t, w*time.Millisecond, b.Delay(i+1, 0), "attempt %d", i+1)
	}
	assert.Equal(t, time.Second, b.Delay(math.MaxInt, 0), "attempt MaxInt")
	assert.Equal(t, 100*time.Millisecond, b.Delay(0, 0), "attempt 0 counts as 1")
	assert.Equal(t, 100*time.Millisecond, b.Delay(math.MinInt, 0), "attempt MinInt counts as 1")
}

func TestBackoff_RT1_Multiplier(t *testing.T) {
	b := mustExponential(t, retry.Exponential{Base: time.Second, Multiplier: 1.5, Max: time.Hour, Jitter: retry.NoJitter})
	assert.Equal(t, 1500*time.Millisecond, b.Delay(2, 0))
	assert.Equal(t, 2250*time.Millisecond, b.Delay(3, 0))
}

func TestBackoff_RT1_Defaults(t *testing.T) {
	b := mustExponential(t, retry.Exponential{Jitter: retry.NoJitter})
	assert.Equal(t, retry.DefaultBase, b.Delay(1, 0))
	assert.Equal(t, 2*retry.DefaultBase, b.Delay(2, 0))
	assert.Equal(t, retry.DefaultMax, b.Delay(1000, 0))

	big := mustExponential(t, retry.Exponential{Base: time.Minute, Jitter: retry.NoJitter})
	assert.Equal(t, time.Minute, big.Delay(5, 0), "a zero Max below Base becomes Base")
}

func TestBackoff_RT1_FullJitter(t *testing.T) {
	cfg := retry.Exponential{Base: 100 * time.Millisecond, Max: time.Second, Rand: fixed(0.5)}
	b := mustExponential(t, cfg)
	assert.Equal(t, 200*time.Millisecond, b.Delay(3, 0), "half of 400ms")
	assert.Equal(t, 500*time.Millisecond, b.Delay(60, 0), "half of the 1s cap")

	cfg.Rand = fixed(0)
	assert.Equal(t, time.Duration(0), mustExponential(t, cfg).Delay(3, 0))
}

func TestBackoff_RT1_EqualJitter(t *testing.T) {
	cfg := retry.Exponential{Base: 100 * time.Millisecond, Max: time.Second, Jitter: retry.EqualJitter, Rand: fixed(0.5)}
	assert.Equal(t, 300*time.Millisecond, mustExponential(t, cfg).Delay(3, 0), "200ms + half of 200ms")
	cfg.Rand = fixed(0)
	assert.Equal(t, 200*time.Millisecond, mustExponential(t, cfg).Delay(3, 0), "never below half")
}

func TestBackoff_RT1_DecorrelatedJitter(t *testing.T) {
	b := mustExponential(t, retry.Exponential{Base: 100 * time.Millisecond, Max: time.Second, Jitter: retry.DecorrelatedJitter, Rand: fixed(0.5)})
	assert.Equal(t, 200*time.Millisecond, b.Delay(1, 0), "between 100ms and 3*100ms")
	assert.Equal(t, 350*time.Millisecond, b.Delay(2, 200*time.Millisecond), "between 100ms and 600ms")
	assert.Equal(t, time.Second, b.Delay(3, time.Duration(math.MaxInt64)), "3*prev overflows int64 but not the cap")
}

func TestBackoff_RT1_OutOfRangeRandIsClamped(t *testing.T) {
	for _, u := range []float64{-1, 1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, j := range []retry.Jitter{retry.FullJitter, retry.EqualJitter, retry.DecorrelatedJitter} {
			b := mustExponential(t, retry.Exponential{Base: 100 * time.Millisecond, Max: time.Second, Jitter: j, Rand: fixed(u)})
			for _, attempt := range []int{1, 2, 30, math.MaxInt} {
				d := b.Delay(attempt, 900*time.Millisecond)
				assert.GreaterOrEqual(t, d, time.Duration(0), "%v rand=%v attempt=%d", j, u, attempt)
				assert.LessOrEqual(t, d, time.Second, "%v rand=%v attempt=%d", j, u, attempt)
			}
		}
	}
}

func TestBackoff_RT1_SuppliedRandIsReproducible(t *testing.T) {
	run := func() []time.Duration {
		r := rand.New(rand.NewPCG(1, 2))
		b := mustExponential(t, retry.Exponential{Jitter: retry.DecorrelatedJitter, Rand: r.Float64})
		var out []time.Duration
		var prev time.Duration
		for attempt := 1; attempt <= 10; attempt++ {
			prev = b.Delay(attempt, prev)
			out = append(out, prev)
		}
		return out
	}
	first := run()
	assert.Equal(t, first, run())
	assert.NotEqual(t, first[0], first[1], "the source is actually used")
}

func TestBackoff_RT1_Constant(t *testing.T) {
	b, err := retry.NewConstant(250 * time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, 250*time.Millisecond, b.Delay(1, 0))
	assert.Equal(t, 250*time.Millisecond, b.Delay(math.MaxInt, time.Hour))

	_, err = retry.NewConstant(-time.Millisecond)
	assert.EqualError(t, err, "retry: Constant delay must be >= 0, got -1ms")
}

func TestBackoff_RT1_BackoffFunc(t *testing.T) {
	var b retry.Backoff = retry.BackoffFunc(func(attempt int, prev time.Duration) time.Duration {
		return time.Duration(attempt)*time.Second + prev
	})
	assert.Equal(t, 3*time.Second+time.Millisecond, b.Delay(3, time.Millisecond))
}

func TestBackoff_RT1_ConfigErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name string
		cfg  retry.Exponential
		want string
	}{
		{name: "negative base", cfg: retry.Exponential{Base: -1}, want: "retry: Exponential.Base must be 0 (the default, 100ms) or positive, got -1ns"},
		{name: "negative max", cfg: retry.Exponential{Max: -time.Second}, want: "retry: Exponential.Max must be 0 (the default, 10s or Base if larger) or at least Base (100ms), got -1s"},
		{name: "max below base", cfg: retry.Exponential{Base: time.Second, Max: time.Millisecond}, want: "retry: Exponential.Max must be 0 (the default, 10s or Base if larger) or at least Base (1s), got 1ms"},
		{name: "multiplier below 1", cfg: retry.Exponential{Multiplier: 0.5}, want: "retry: Exponential.Multiplier must be 0 (the default, 2) or a finite number >= 1, got 0.5"},
		{name: "multiplier NaN", cfg: retry.Exponential{Multiplier: math.NaN()}, want: "retry: Exponential.Multiplier must be 0 (the default, 2) or a finite number >= 1, got NaN"},
		{name: "multiplier Inf", cfg: retry.Exponential{Multiplier: math.Inf(1)}, want: "retry: Exponential.Multiplier must be 0 (the default, 2) or a finite number >= 1, got +Inf"},
		{name: "unknown jitter", cfg: retry.Exponential{Jitter: 9}, want: "retry: Exponential.Jitter must be one of FullJitter, EqualJitter, DecorrelatedJitter, NoJitter, got Jitter(9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := retry.NewExponential(tt.cfg)
			assert.Nil(t, b)
			assert.EqualError(t, err, tt.want)
		})
	}
}

// FuzzBackoff checks the schedule arithmetic for every configuration
// NewExponential accepts: delays are never negative, never above the cap,
// and no attempt number or previous delay overflows.
func FuzzBackoff(f *testing.F) {
	f.Add(1, int64(0), int64(100*time.Millisecond), int64(10*time.Second), 2.0, uint8(0), 0.5)
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(1), int64(math.MaxInt64), 1.0000001, uint8(2), 0.999999)
	f.Add(-7, int64(-5), int64(0), int64(0), 0.0, uint8(1), -3.0)
	f.Add(63, int64(time.Hour), int64(time.Nanosecond), int64(time.Minute), 1e300, uint8(3), math.NaN())
	f.Fuzz(func(t *testing.T, attempt int, prev, base, maxDelay int64, mult float64, jitter uint8, u float64) {
		cfg := retry.Exponential{
			Base:       time.Duration(base),
			Max:        time.Duration(maxDelay),
			Multiplier: mult,
			Jitter:     retry.Jitter(jitter % 5), // 4 is invalid on purpose
			Rand:       fixed(u),
		}
		b, err := retry.NewExponential(cfg)
		if err != nil {
			return
		}
		limit := cfg.Max
		if limit == 0 {
			limit = max(retry.DefaultMax, cfg.Base)
		}
		d := b.Delay(attempt, time.Duration(prev))
		if d < 0 || d > limit {
			t.Fatalf("Delay(%d, %v) = %v, want within [0, %v]", attempt, time.Duration(prev), d, limit)
		}
	})
}

// TestBackoffFunc_NZ1_NilDelaysNothing: Config and Settings reject a nil
// BackoffFunc; called directly, its Delay is 0 instead of a panic.
func TestBackoffFunc_NZ1_NilDelaysNothing(t *testing.T) {
	assert.Equal(t, time.Duration(0), retry.BackoffFunc(nil).Delay(2, time.Second))
}
