package sim_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/sim"
)

// A delay column shows "-" only when there was nothing to time: a burst
// detected at once shows 0.0s; a latency not measured shows "-".
func TestWriteTable_SM9_ZeroDelayIsNotNever(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, sim.WriteTable(&out, []sim.Result{
		{Name: "at once", Trips: 1, Bursts: 1, Detected: 1, Recovered: 1, LatencyP50: 1500, LatencyP99: 12_345_678, LatencyMax: 12_345_678, LatencyMeasured: true},
		{Name: "never", Bursts: 1},
	}))
	lines := strings.Split(out.String(), "\n")
	assert.Equal(t, "    at once     0   0       0        0     0        0        0               0      1  0.0s       1/1    0.0s     0.0s  1.5µs  12.3ms  12.3ms", lines[1])
	assert.Equal(t, "      never     0   0       0        0     0        0        0               0      0     -       0/1       -        -      -       -       -", lines[2])
}

// Latencies measured as 0 (every call refused at once, say) print as 0s,
// not as "-", which is for latencies not measured (a shadow's).
func TestWriteTable_SM9_ZeroLatencyIsMeasured(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, sim.WriteTable(&out, []sim.Result{
		{Name: "refused", Calls: 2, Refused: 2, LatencyMeasured: true},
		{Name: "shadow", Calls: 2, Refused: 2},
	}))
	lines := strings.Split(out.String(), "\n")
	refused, shadow := strings.Fields(lines[1]), strings.Fields(lines[2])
	assert.Equal(t, []string{"0s", "0s", "0s"}, refused[len(refused)-3:], lines[1])
	assert.Equal(t, []string{"-", "-", "-"}, shadow[len(shadow)-3:], lines[2])
}

// TestWriteTable_NZ1_NilWriter: a nil io.Writer, typed nil too, is an
// error, not a panic in the tabwriter.
func TestWriteTable_NZ1_NilWriter(t *testing.T) {
	results := []sim.Result{{Name: "a"}}
	assert.EqualError(t, sim.WriteTable(nil, results), "sim: WriteTable: nil io.Writer")
	assert.EqualError(t, sim.WriteTable((*bytes.Buffer)(nil), results), "sim: WriteTable: nil io.Writer")
}
