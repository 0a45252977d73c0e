package ramparttoml_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparttoml"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/sim"
)

// Every table and key of the format reaches its Go field.
func TestParse_EveryTable(t *testing.T) {
	f, err := ramparttoml.Parse("c.toml", []byte(`
[options]
burst_min = 3
seed = 7
[[candidate]]
name = "all"
timeout = "250ms"
[candidate.breaker]
cool_down = "immediate"
max_probes = 2
[candidate.breaker.consecutive]
failures = 4
[candidate.breaker.slow_calls]
threshold = "1s"
window = {period = "10s", buckets = 5}
[candidate.breaker.probes]
probes = 4
ratio = 0.75
[candidate.retry]
max_attempts = 4
base = "10ms"
jitter = "none"
[candidate.retry.budget]
ratio = 0.1
[candidate.concurrency]
max = 32
[candidate.rate_limit]
limit = 12.5
burst = 5
[[candidate]]
name = "none"
`))
	require.NoError(t, err)
	assert.Equal(t, sim.Config{BurstMin: 3, Seed: 7}, f.Replay)
	require.Len(t, f.Candidates, 2)
	c := f.Candidates[0]
	assert.Equal(t, 250*time.Millisecond, c.Timeout)
	assert.Equal(t, circuitbreaker.Immediate, c.Breaker.CoolDown)
	assert.Equal(t, circuitbreaker.SuccessRate{Probes: 4, Ratio: 0.75, Trip: circuitbreaker.Any(circuitbreaker.Consecutive{Failures: 4},
		circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 5}})}, c.Breaker.Policy)
	assert.Equal(t, &sim.Retry{MaxAttempts: 4, Backoff: retry.Exponential{Base: 10 * time.Millisecond, Jitter: retry.NoJitter}}, &sim.Retry{MaxAttempts: c.Retry.MaxAttempts, Backoff: c.Retry.Backoff})
	assert.InDelta(t, 0.1, c.Retry.Budget.Ratio, 0)
	assert.Equal(t, 32, c.Concurrency)
	assert.Equal(t, &ratelimit.Tuning{Limit: rate.Limit(12.5), Burst: 5}, c.RateLimit)
	assert.Equal(t, sim.Candidate{Name: "all", Timeout: c.Timeout, Breaker: c.Breaker, Retry: c.Retry}, c.Sim(), "limits are not replayed")

	sh, err := c.Shadow()
	require.NoError(t, err)
	assert.Equal(t, "all", sh.Name)
	_, err = f.Candidates[1].Shadow()
	assert.EqualError(t, err, `ramparttoml: candidate "none" has no [candidate.breaker] table to shadow`)

	got, err := f.Candidate("none")
	require.NoError(t, err)
	assert.Equal(t, "none", got.Name)
	_, err = f.Candidate("")
	assert.EqualError(t, err, "ramparttoml: the file has 2 candidates: name one")
	_, err = f.Candidate("x")
	assert.EqualError(t, err, `ramparttoml: no candidate named "x"`)
}

// Bad limits are reported at their key, as the other tables' values are.
func TestParse_BadLimits(t *testing.T) {
	for _, tc := range []struct{ name, toml, want string }{
		{"concurrency", "[[candidate]]\nname = \"a\"\n[candidate.concurrency]\nmax = 0\n", "c.toml:4: candidate.0.concurrency.max: concurrency: max must be >= 1, got 0"},
		{"rate", "[[candidate]]\nname = \"a\"\n[candidate.rate_limit]\nlimit = -1.0\n", "c.toml:4: candidate.0.rate_limit.limit: ratelimit: Tuning.Limit must be >= 0 (or rate.Inf), got -1"},
		{"burst", "[[candidate]]\nname = \"a\"\n[candidate.rate_limit]\nlimit = 1.0\nburst = -1\n", "c.toml:5: candidate.0.rate_limit.burst: ratelimit: Tuning.Burst must be >= 0, got -1"},
		{"no burst", "[[candidate]]\nname = \"a\"\n[candidate.rate_limit]\nlimit = 100.0\n", "c.toml:4: candidate.0.rate_limit.limit: ratelimit: Tuning.Burst must be >= 1 with a Limit of 100 per second (a zero Burst admits no call; a Limit of 0 admits none), got 0"},
		{"misspelt", "[[candidate]]\nname = \"a\"\n[candidate.rate_limit]\nlimt = 1.0\n", `c.toml:4: candidate.0.rate_limit.limt: unknown key "limt" (misspelt?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ramparttoml.Parse("c.toml", []byte(tc.toml))
			assert.EqualError(t, err, tc.want)
		})
	}
}

// Load reads a file, and names it in its errors as given.
func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.toml")
	require.NoError(t, os.WriteFile(p, []byte("[[candidate]]\nname = \"a\"\ntimeout = \"soon\"\n"), 0o600))
	_, err := ramparttoml.Load(p)
	assert.EqualError(t, err, p+`:3: candidate.0.timeout: must be a duration such as 1.5s or 300ms, got "soon"`)
	_, err = ramparttoml.Load(filepath.Join(t.TempDir(), "missing.toml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// "immediate" and "forever" are a cool-down's words: every other duration
// key refuses them, as it refuses a number without a unit.
func TestParse_DurationWords(t *testing.T) {
	for _, tc := range []struct{ name, toml, want string }{
		{"timeout forever", "timeout = \"forever\"\n", `c.toml:3: candidate.0.timeout: must be a duration such as 1.5s or 300ms, got "forever"`},
		{"base forever", "[candidate.retry]\nbase = \"forever\"\n", `c.toml:4: candidate.0.retry.base: must be a duration such as 1.5s or 300ms, got "forever"`},
		{"probe lease immediate", "[candidate.breaker]\nprobe_lease = \"immediate\"\n", `c.toml:4: candidate.0.breaker.probe_lease: must be a duration such as 1.5s or 300ms, got "immediate"`},
		{"max cool-down forever", "[candidate.breaker]\nmax_cool_down = \"forever\"\n", `c.toml:4: candidate.0.breaker.max_cool_down: must be a duration such as 1.5s or 300ms, got "forever"`},
		{"no unit", "[candidate.breaker]\ncool_down = 5\n", `c.toml:4: candidate.0.breaker.cool_down: must be a duration such as 1.5s or 300ms, or immediate or forever, got "5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ramparttoml.Parse("c.toml", []byte("[[candidate]]\nname = \"a\"\n"+tc.toml))
			assert.EqualError(t, err, tc.want)
		})
	}
	f, err := ramparttoml.Parse("c.toml", []byte("[[candidate]]\nname = \"a\"\n[candidate.breaker]\ncool_down = \"forever\"\n"))
	require.NoError(t, err)
	assert.Equal(t, rampart.Forever, f.Candidates[0].Breaker.CoolDown)
}

// A breaker table without a trip rule means five in a row, as a nil
// Policy does to circuitbreaker.New, and says so: as a Tuning's Policy it
// must not be nil, which would keep a running breaker's rule.
func TestParse_NoTripRule(t *testing.T) {
	f, err := ramparttoml.Parse("c.toml", []byte("[[candidate]]\nname = \"a\"\n[candidate.breaker]\ncool_down = \"5s\"\n"+
		"[[candidate]]\nname = \"b\"\n[candidate.breaker.probes]\nprobes = 4\n"))
	require.NoError(t, err)
	assert.Equal(t, circuitbreaker.Consecutive{}, f.Candidates[0].Breaker.Policy)
	assert.Equal(t, circuitbreaker.SuccessRate{Trip: circuitbreaker.Consecutive{}, Probes: 4}, f.Candidates[1].Breaker.Policy)
}

// A value's error is reported at its own key, even when another table has
// a key of the same name, or the message names a second field.
func TestParse_ErrorAtItsKey(t *testing.T) {
	const head = "[[candidate]]\nname = \"a\"\n[candidate.breaker.failure_rate]\nratio = 0.5\nwindow = {size = 20}\n"
	for _, tc := range []struct{ name, toml, want string }{
		{"slow calls' ratio", head + "[candidate.breaker.slow_calls]\nthreshold = \"1s\"\nratio = 2.0\nwindow = {size = 20}\n",
			"c.toml:8: candidate.0.breaker.slow_calls.ratio: circuitbreaker: SlowCalls.Ratio must be in (0, 1], got 2 (Any policy 1)"},
		{"probes' ratio", head + "[candidate.breaker.probes]\nratio = 2.0\n",
			"c.toml:7: candidate.0.breaker.probes.ratio: circuitbreaker: SuccessRate.Ratio must be in (0, 1], got 2"},
		{"max cool-down", "[[candidate]]\nname = \"a\"\n[candidate.breaker]\ncool_down = \"10s\"\nmax_cool_down = \"1s\"\n",
			"c.toml:5: candidate.0.breaker.max_cool_down: circuitbreaker: MaxCoolDown must be >= CoolDown (10s), got 1s"},
		// toml itself names the line where the last candidate sets a key.
		{"a type in the first of two candidates", "[[candidate]]\nname = \"a\"\n[candidate.breaker]\nmax_probes = \"two\"\n[[candidate]]\nname = \"b\"\n[candidate.breaker]\nmax_probes = 2\n",
			"c.toml:4: candidate.0.breaker.max_probes: incompatible types: TOML value has type string; destination has type integer"},
		{"a duration in the first of two candidates", "[[candidate]]\nname = \"a\"\n[candidate.breaker]\ncool_down = \"bogus\"\n[[candidate]]\nname = \"b\"\n[candidate.breaker]\ncool_down = \"1s\"\n",
			"c.toml:4: candidate.0.breaker.cool_down: must be a duration such as 1.5s or 300ms, or immediate or forever, got \"bogus\""},
		{"a type in the second of two candidates", "[[candidate]]\nname = \"a\"\n[candidate.breaker]\nmax_probes = 2\n[[candidate]]\nname = \"b\"\n[candidate.breaker]\nmax_probes = \"two\"\n",
			"c.toml:8: candidate.1.breaker.max_probes: incompatible types: TOML value has type string; destination has type integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ramparttoml.Parse("c.toml", []byte(tc.toml))
			assert.EqualError(t, err, tc.want)
		})
	}
}
