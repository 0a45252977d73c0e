package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// The self-demonstration keeps the old settings on a bad file, applies a
// good one, and leaves the Open breaker's cool-down alone.
func TestDemo_ST1(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, demo(&out))
	assert.Equal(t, `applied settings.toml: cool_down 1h0m0s, max_probes 1
kept the old settings: settings.toml: breaker.max_probez: unknown key (misspelt?)
applied settings.toml: cool_down 2s, max_probes 2
still open, for about 1h0m0s more: the cool-down it opened with
2 changes reported to the observer
`, out.String())
}

// Every kind of bad file is reported with the file and the key, and
// changes nothing.
func TestLoad_ST1_BadFiles(t *testing.T) {
	for _, tc := range []struct{ name, toml, want string }{
		{"syntax", "[breaker\n", `s.toml: toml: line 2: expected '.' or ']' to end table name, but got '\n' instead`},
		{"unknown key", "[breaker]\ncolour = 1\n", "s.toml: breaker.colour: unknown key (misspelt?)"},
		{"wrong type", "[breaker]\nmax_probes = \"two\"\n", `s.toml: toml: line 2 (last key "breaker.max_probes"): incompatible types: TOML value has type string; destination has type integer`},
		{"bad duration", "[breaker]\ncool_down = \"soon\"\n", `s.toml: toml: line 2 (last key "breaker.cool_down"): must be a duration such as 1.5s or 300ms (or immediate, forever), got "soon"`},
		{"out of range", "[breaker]\nmax_probes = 5000\n", "s.toml: breaker: circuitbreaker: MaxProbes must be in [0, 1024], got 5000"},
		{"trip rule", "[breaker.consecutive]\nfailures = 3\n", "s.toml: breaker.consecutive: a trip rule cannot change while the breaker runs; restart with it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "s.toml")
				require.NoError(t, os.WriteFile(p, []byte(tc.toml), 0o600))
				br, err := circuitbreaker.New(circuitbreaker.Config{CoolDown: 3 * time.Second})
				require.NoError(t, err)
				var out bytes.Buffer
				err = apply(br, p, &out)
				require.Error(t, err)
				assert.Equal(t, tc.want, err.Error())
				assert.Equal(t, "kept the old settings: "+tc.want+"\n", out.String())
				// The old settings stay: a trip cools down for 3s.
				pm, err := br.TryAcquire()
				require.NoError(t, err)
				for range 5 {
					pm.Failure(errors.New("down"))
					if pm, err = br.TryAcquire(); err != nil {
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

// The shipped settings file loads.
func TestLoad_ST1_Shipped(t *testing.T) {
	tn, err := load("settings.toml")
	require.NoError(t, err)
	assert.Equal(t, circuitbreaker.Tuning{CoolDown: 5 * time.Second, MaxProbes: 2, ProbeLease: 10 * time.Second}, tn)
}
