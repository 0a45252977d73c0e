package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFleet runs a short version of the example against a redis-server it
// starts, and checks the claims that do not depend on the outage's length:
// with shared state exactly MaxProbes probes run per HalfOpen round across
// the fleet, every replica is open within 100 ms of the first trip, and
// the backend gets fewer hits. (The quarter of the hits is the default,
// longer run's claim.)
func TestFleet(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not on PATH (CI is set: this test must not be skipped)")
		}
		t.Skip("redis-server is not on PATH")
	}
	o := defaults()
	o.healthy, o.outage, o.after = 200*time.Millisecond, time.Second, 300*time.Millisecond
	o.callers, o.maxProbes, o.latency = 2, 2, 2*time.Millisecond
	o.jsonOut = true
	var out bytes.Buffer
	require.NoError(t, run(o, &out))
	var r report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.Equal(t, 2, r.Shared.MinRoundProbes)
	assert.Equal(t, 2, r.Shared.MaxRoundProbes)
	assert.Equal(t, 16, r.Independent.MaxRoundProbes, "independent: every replica probes")
	assert.Less(t, r.Shared.AllOpenAfterMS, 100.0)
	assert.GreaterOrEqual(t, r.Shared.AllOpenAfterMS, 0.0)
	assert.Less(t, r.Shared.OutageHits, r.Independent.OutageHits)
	assert.Positive(t, r.Shared.RedisCommands)
	assert.Zero(t, r.Independent.RedisCommands)
}
