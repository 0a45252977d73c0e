package hedge_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/wrap"
)

func TestNewLayer_BadConfigNamesTheField(t *testing.T) {
	valid := func() hedge.Config[string, string] {
		return hedge.Config[string, string]{Hedgeable: always, Budget: budgettest.New(0)}
	}
	for _, tc := range []struct {
		name   string
		change func(*hedge.Config[string, string])
		want   string
	}{
		{
			name:   "nil Hedgeable",
			change: func(c *hedge.Config[string, string]) { c.Hedgeable = nil },
			want:   "hedge: Hedgeable must not be nil (hedge only requests that are safe to repeat; return true to hedge all)",
		},
		{
			name:   "nil Budget",
			change: func(c *hedge.Config[string, string]) { c.Budget = nil },
			want:   "hedge: Budget must not be nil (every hedge must be bounded; a Budget whose Withdraw returns true removes the bound)",
		},
		{
			name:   "nil pointer Budget",
			change: func(c *hedge.Config[string, string]) { c.Budget = (*budgettest.Budget)(nil) },
			want:   "hedge: Budget must not be a nil pointer, got *budgettest.Budget(nil)",
		},
		{
			name:   "negative MaxAttempts",
			change: func(c *hedge.Config[string, string]) { c.MaxAttempts = -1 },
			want:   "hedge: MaxAttempts must be 0 (the default, 2) or between 1 and 16, got -1",
		},
		{
			name:   "absurd MaxAttempts",
			change: func(c *hedge.Config[string, string]) { c.MaxAttempts = 17 },
			want:   "hedge: MaxAttempts must be 0 (the default, 2) or between 1 and 16, got 17",
		},
		{
			name:   "negative Delay",
			change: func(c *hedge.Config[string, string]) { c.Delay = -time.Millisecond },
			want:   "hedge: Delay must be 0 (the default, 50ms) or positive, got -1ms",
		},
		{
			name:   "Quantile given in percent",
			change: func(c *hedge.Config[string, string]) { c.Quantile = 95 },
			want:   "hedge: Quantile must be 0 (a fixed Delay) or a fraction in (0, 1] (0.95 for p95), got 95",
		},
		{
			name:   "negative Quantile",
			change: func(c *hedge.Config[string, string]) { c.Quantile = -0.5 },
			want:   "hedge: Quantile must be 0 (a fixed Delay) or a fraction in (0, 1] (0.95 for p95), got -0.5",
		},
		{
			name:   "NaN Quantile",
			change: func(c *hedge.Config[string, string]) { c.Quantile = math.NaN() },
			want:   "hedge: Quantile must be 0 (a fixed Delay) or a fraction in (0, 1] (0.95 for p95), got NaN",
		},
		{
			name:   "Window without Quantile",
			change: func(c *hedge.Config[string, string]) { c.Window = 10 },
			want:   "hedge: Window is only meaningful with a Quantile, got 10 with Quantile 0",
		},
		{
			name:   "MinSamples without Quantile",
			change: func(c *hedge.Config[string, string]) { c.MinSamples = 10 },
			want:   "hedge: MinSamples is only meaningful with a Quantile, got 10 with Quantile 0",
		},
		{
			name:   "negative Window",
			change: func(c *hedge.Config[string, string]) { c.Quantile, c.Window = 0.9, -1 },
			want:   "hedge: Window must be 0 (the default, 256) or between 1 and 65536, got -1",
		},
		{
			name:   "absurd Window",
			change: func(c *hedge.Config[string, string]) { c.Quantile, c.Window = 0.9, 1<<16+1 },
			want:   "hedge: Window must be 0 (the default, 256) or between 1 and 65536, got 65537",
		},
		{
			name:   "MinSamples above Window",
			change: func(c *hedge.Config[string, string]) { c.Quantile, c.Window, c.MinSamples = 0.9, 10, 11 },
			want:   "hedge: MinSamples must be 0 (the default, 32 or Window if smaller) or between 1 and Window (10), got 11",
		},
		{
			name:   "MinSamples above default Window",
			change: func(c *hedge.Config[string, string]) { c.Quantile, c.MinSamples = 0.9, 257 },
			want:   "hedge: MinSamples must be 0 (the default, 32 or Window if smaller) or between 1 and Window (256), got 257",
		},
		{
			name:   "negative MinSamples",
			change: func(c *hedge.Config[string, string]) { c.Quantile, c.MinSamples = 0.9, -1 },
			want:   "hedge: MinSamples must be 0 (the default, 32 or Window if smaller) or between 1 and Window (256), got -1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.change(&cfg)
			l, err := hedge.NewLayer(cfg)
			assert.EqualError(t, err, tc.want)
			assert.Nil(t, l)
			svc, err := wrap.Service(newBackend(), hedge.NewLayer, cfg)
			assert.EqualError(t, err, tc.want)
			assert.Nil(t, svc)
		})
	}
}

func TestNewLayer_ValidConfigs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*hedge.Config[string, string])
	}{
		{name: "zero values take defaults", change: func(*hedge.Config[string, string]) {}},
		{name: "bounds", change: func(c *hedge.Config[string, string]) {
			c.MaxAttempts, c.Quantile, c.Window, c.MinSamples = 16, 1, 1<<16, 1<<16
		}},
		{name: "small Window lowers the default MinSamples", change: func(c *hedge.Config[string, string]) {
			c.Quantile, c.Window = 0.5, 4
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hedge.Config[string, string]{Hedgeable: always, Budget: budgettest.New(0)}
			tc.change(&cfg)
			l, err := hedge.NewLayer(cfg)
			require.NoError(t, err)
			assert.NotNil(t, l)
		})
	}
}

// hedge and retry follow one rule for MaxAttempts: 0 is the default, 1
// disables, and above the package's MaxAttemptsLimit is an error, never
// clamped.
func TestHedge_RT12_MaxAttemptsAboveTheLimitIsAnError(t *testing.T) {
	cfg := hedge.Config[string, string]{Hedgeable: always, Budget: budgettest.New(0), MaxAttempts: hedge.MaxAttemptsLimit}
	_, err := hedge.NewLayer(cfg)
	require.NoError(t, err, "the limit itself is accepted")

	cfg.MaxAttempts = hedge.MaxAttemptsLimit + 1
	_, err = hedge.NewLayer(cfg)
	assert.EqualError(t, err, "hedge: MaxAttempts must be 0 (the default, 2) or between 1 and 16, got 17")
}
