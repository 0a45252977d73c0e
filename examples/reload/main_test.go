package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// The self-demonstration keeps the old settings on a bad file and on a
// change that cannot be made, applies a good one, and leaves the Open
// breaker's cool-down alone.
func TestDemo_ST4(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, demo(&out))
	assert.Equal(t, `started with settings.toml "live": timeout 1s, cool_down 1h0m0s, max_probes 1, Consecutive {Failures:1 Successes:0}, max_attempts 2, concurrency 8
kept the old settings: settings.toml:10: candidate.0.breaker.max_probez: unknown key "max_probez" (misspelt?)
kept the old settings: settings.toml: candidate "live": breaker: circuitbreaker: Tuning.Policy: must be a Consecutive, as the breaker's policy is (got a FailureRate)
applied settings.toml "live": timeout 500ms, cool_down 2s, max_probes 2, Consecutive {Failures:3 Successes:0}, max_attempts 3, concurrency 16
still open, for about 1h0m0s more: the cool-down it opened with
4 changes reported to the observer (breaker, retry, budget, concurrency)
`, out.String())
}

// Every kind of bad file, and every change that cannot be made while the
// stack runs, is reported with the file and the key, and changes nothing.
func TestApply_ST4_BadFiles(t *testing.T) {
	const good = "[[candidate]]\nname = \"a\"\n[candidate.breaker]\ncool_down = \"3s\"\n[candidate.retry]\nmax_attempts = 2\n[candidate.concurrency]\nmax = 4\n"
	for _, tc := range []struct{ name, toml, want string }{
		{"syntax", "[[candidate]\n", `s.toml:2: expected end of table array name delimiter ']', but got '\n' instead`},
		{"unknown key", good + "colour = 1\n", `s.toml:9: candidate.0.concurrency.colour: unknown key "colour" (misspelt?)`},
		{"wrong type", good + "[candidate.rate_limit]\nburst = \"two\"\n", `s.toml:10: candidate.0.rate_limit.burst: incompatible types: TOML value has type string; destination has type integer`},
		{"out of range", "[[candidate]]\nname = \"a\"\n[candidate.breaker]\nmax_probes = 5000\n", "s.toml:4: candidate.0.breaker.max_probes: circuitbreaker: MaxProbes must be in [0, 1024], got 5000"},
		{"another trip rule", good + "[candidate.breaker.slow_calls]\nratio = 0.5\n", `s.toml: candidate "a": breaker: circuitbreaker: Tuning.Policy: must be a Consecutive, as the breaker's policy is (got a SlowCalls)`},
		{"no candidate of that name", "[[candidate]]\nname = \"b\"\n", `s.toml: ramparttoml: no candidate named "a"`},
		{"a budget's window", good + "[candidate.retry.budget]\nwindow = \"20s\"\n", `s.toml: candidate "a": retry.budget: the budget's window and no_budget cannot change while the stack runs; restart with them`},
		{"a limit removed", "[[candidate]]\nname = \"a\"\n[candidate.retry]\nmax_attempts = 2\n", `s.toml: candidate "a": a concurrency or rate_limit table cannot be added or removed while the stack runs; restart with it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "s.toml")
				require.NoError(t, os.WriteFile(p, []byte(good), 0o600))
				st, err := start(p, "a", nil, &bytes.Buffer{})
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(p, []byte(tc.toml), 0o600))
				var out bytes.Buffer
				err = st.apply(p, &out)
				require.Error(t, err)
				assert.Equal(t, tc.want, err.Error())
				assert.Equal(t, "kept the old settings: "+tc.want+"\n", out.String())
				// The old settings stay: a trip cools down for 3s, two
				// attempts, four slots.
				assert.Equal(t, 2, st.retries.Settings().MaxAttempts)
				assert.Equal(t, 4, st.limit.Max())
				pm, err := st.breaker.TryAcquire()
				require.NoError(t, err)
				for range 5 {
					pm.Failure(errors.New("down"))
					if pm, err = st.breaker.TryAcquire(); err != nil {
						break
					}
				}
				var oe *circuitbreaker.OpenError
				require.ErrorAs(t, err, &oe)
				assert.Equal(t, 3*time.Second, oe.RetryAfter())
			})
		})
	}
}

// The shipped settings file starts a stack, and applies again as it is,
// with every setting reloaded.
func TestApply_ST4_Shipped(t *testing.T) {
	var out bytes.Buffer
	st, err := start("settings.toml", "", nil, &out)
	require.NoError(t, err)
	require.NoError(t, st.apply("settings.toml", &out))
	const line = `settings.toml "backend": timeout 1s, cool_down 5s, max_probes 2, FailureRate {Window:{Size:20 Period:0s Buckets:0 MinCalls:0} Ratio:0.5}, max_attempts 3, concurrency 64, rate_limit 200/s burst 20`
	assert.Equal(t, "started with "+line+"\napplied "+line+"\n", out.String())
	assert.Equal(t, 3, st.retries.Settings().MaxAttempts)
	assert.Equal(t, 64, st.limit.Max())
	assert.Equal(t, 20, st.rate.Burst())
	assert.Equal(t, time.Second, time.Duration(st.timeout.Load()))
}

// The timeout is per attempt, as a replay of the same candidate has it:
// an attempt that overruns it is retried, and the retry, within its own
// timeout (not what the first left of it), succeeds.
func TestStart_ST4_TimeoutPerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "s.toml")
		require.NoError(t, os.WriteFile(p, []byte("[[candidate]]\nname = \"a\"\ntimeout = \"100ms\"\n[candidate.retry]\nmax_attempts = 2\nbase = \"10ms\"\njitter = \"none\"\nno_budget = true\n"), 0o600))
		attempts := 0
		slowFirst := rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
			attempts++
			if attempts == 1 {
				<-ctx.Done() // overruns the timeout
				return "", context.Cause(ctx)
			}
			time.Sleep(90 * time.Millisecond) // within its own timeout, not the first's
			return "ok", nil
		})
		st, err := startOn(slowFirst, p, "a", nil, &bytes.Buffer{})
		require.NoError(t, err)
		t0 := time.Now()
		got, err := st.svc.Call(context.Background(), "req")
		require.NoError(t, err)
		assert.Equal(t, "ok", got)
		assert.Equal(t, 2, attempts)
		assert.Equal(t, 100*time.Millisecond+10*time.Millisecond+90*time.Millisecond, time.Since(t0), "the first attempt's timeout, the backoff, the second attempt")
	})
}

// A candidate without a breaker table has no breaker, as in a replay of
// it (rampart-sim's "no breaker"): failures are never refused; a breaker
// table added later needs a restart, as any other table does.
func TestStart_ST4_NoBreakerTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "s.toml")
		require.NoError(t, os.WriteFile(p, []byte("[[candidate]]\nname = \"a\"\ntimeout = \"1s\"\n"), 0o600))
		down := errors.New("down")
		failing := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", down })
		st, err := startOn(failing, p, "a", nil, &bytes.Buffer{})
		require.NoError(t, err)
		for i := range 20 {
			_, err := st.svc.Call(context.Background(), "req")
			require.ErrorIs(t, err, down, "call %d", i)
			require.NotErrorIs(t, err, circuitbreaker.ErrOpen, "call %d", i)
		}
		require.NoError(t, os.WriteFile(p, []byte("[[candidate]]\nname = \"a\"\ntimeout = \"1s\"\n[candidate.breaker]\ncool_down = \"5s\"\n"), 0o600))
		var out bytes.Buffer
		err = st.apply(p, &out)
		assert.EqualError(t, err, `s.toml: candidate "a": breaker: a breaker table cannot be added or removed while the stack runs; restart with it`)
		_, err = st.svc.Call(context.Background(), "req")
		assert.ErrorIs(t, err, down)
		assert.NotErrorIs(t, err, circuitbreaker.ErrOpen, "still no breaker")
	})
}

// A budget's window written out as its default is no change of window.
func TestApply_ST4_DefaultWindowWrittenOut(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.toml")
	const head = "[[candidate]]\nname = \"a\"\n[candidate.retry]\nmax_attempts = 2\n"
	require.NoError(t, os.WriteFile(p, []byte(head), 0o600))
	st, err := start(p, "a", nil, &bytes.Buffer{})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte(head+"[candidate.retry.budget]\nwindow = \"10s\"\nratio = 0.5\n"), 0o600))
	require.NoError(t, st.apply(p, &bytes.Buffer{}))
	require.NoError(t, os.WriteFile(p, []byte(head+"[candidate.retry.budget]\nwindow = \"20s\"\n"), 0o600))
	assert.EqualError(t, st.apply(p, &bytes.Buffer{}), `s.toml: candidate "a": retry.budget: the budget's window and no_budget cannot change while the stack runs; restart with them`)
}
