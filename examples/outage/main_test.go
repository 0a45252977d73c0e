package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutage runs the demo on a short schedule over real loopback HTTP and
// checks the claims the README makes for it. It runs in real time (about
// four seconds), because it measures real sockets, so its numbers are only
// meaningful on a machine that is not busy with other tests: it runs only
// when RAMPART_OUTAGE_TEST is set, which .ci/run does in a run of its own
// after the main test run.
func TestOutage(t *testing.T) {
	if os.Getenv("RAMPART_OUTAGE_TEST") == "" {
		t.Skip("set RAMPART_OUTAGE_TEST=1 to run a real 4-second outage on an idle machine")
	}
	o := options{
		healthy: time.Second, outage: 2 * time.Second, after: time.Second,
		slow: time.Second, concurrency: 8, interval: 50 * time.Millisecond,
		naiveRetries: 3, resetTimeout: 500 * time.Millisecond, attemptTimeout: 250 * time.Millisecond,
		jsonOut: true,
	}
	require.NoError(t, o.validate())
	var out bytes.Buffer
	require.NoError(t, run(o, &out, io.Discard))

	t.Log(out.String())
	var got map[string]summary
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	naive, ramp := got["naive"], got["rampart"]

	// 8 callers, each sending every 50ms for 4s.
	assert.Equal(t, int64(8*80), naive.CallerRequests)
	assert.Equal(t, naive.CallerRequests, ramp.CallerRequests)
	assert.Zero(t, naive.Lost)
	assert.Zero(t, ramp.Lost)
	assert.Zero(t, naive.FastFails)
	assert.Positive(t, ramp.FastFails)
	assert.LessOrEqual(t, float64(ramp.BackendHitsOutage), 0.10*float64(naive.BackendHitsOutage),
		"rampart sends at most 10%% of the naive client's load during the outage")
	require.GreaterOrEqual(t, ramp.RecoveryMs, 0.0, "rampart recovers")
	assert.LessOrEqual(t, ramp.RecoveryMs, float64((o.resetTimeout+time.Second)/time.Millisecond),
		"rampart recovers within the reset timeout plus one second")
}

func TestOptions_ValidateNamesFlag(t *testing.T) {
	o := options{outage: time.Second, after: time.Second, concurrency: 0, interval: time.Millisecond,
		resetTimeout: time.Second, attemptTimeout: time.Second}
	assert.EqualError(t, o.validate(), "-concurrency must be >= 1, got 0")
}
