package sim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/sim"
)

// unknownTrace is a trace with what a trace cannot know: a recorded retry
// (attempt 2), calls the live breaker refused, and an ignored call.
func unknownTrace() string {
	var b strings.Builder
	for _, l := range []struct {
		at       time.Duration
		d, o, ex string
	}{
		{0, "10ms", "success", ``},
		{time.Second, "10ms", "failure", ``},
		{1500 * time.Millisecond, "20ms", "failure", `,"attempt":2`}, // the dependency at 1.5s
		{2 * time.Second, "0s", "refused", `,"class":"open"`},
		{3 * time.Second, "0s", "refused", `,"class":"open"`},
		{4 * time.Second, "10ms", "success", ``},
		{5 * time.Second, "0s", "refused", `,"class":"open"`},
		{6 * time.Second, "5ms", "ignored", ``},
	} {
		fmt.Fprintf(&b, `{"start":%q,"duration":%q,"outcome":%q%s}`+"\n", t0.Add(l.at).Format(time.RFC3339Nano), l.d, l.o, l.ex)
	}
	return b.String()
}

// A recorded retry is not a caller's request, but the dependency as it was;
// a call the live breaker refused takes the outcome and duration of the
// latest known entry and is counted as Unknown when sent; an ignored call
// is counted neither way by the breaker nor as a failure.
func TestReplay_SM11_UnknownOutcomes(t *testing.T) {
	ms := time.Millisecond
	res := replay(t, unknownTrace(), sim.Config{BurstMin: 2},
		sim.Candidate{Name: "none"},
		sim.Candidate{Name: "2 in a row", Breaker: &circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: 10 * time.Second}})
	for i := range res {
		res[i].Series, res[i].Resolution = nil, 0
	}
	// Calls 2 and 3 (refused live) meet the recorded retry of 1.5s: a
	// 20ms failure; call 5 the success of 4s.
	assert.Equal(t, sim.Result{Name: "none", Calls: 7, Sent: 7, Succeeded: 3, Failed: 3, Ignored: 1, Unknown: 3,
		LatencyP50: 10 * ms, LatencyP99: 20 * ms, LatencyMax: 20 * ms, Bursts: 1, Span: 6005 * ms}, res[0])
	// Trips on call 2's guessed failure at 2.02s; refuses 3 (not lost:
	// unknown), 4 (lost), 5 (unknown) and 6. The burst 1-3 was detected
	// 1.02s after its start.
	assert.Equal(t, sim.Result{Name: "2 in a row", Calls: 7, Sent: 3, Succeeded: 1, Failed: 2, Refused: 4, LostGoodput: 1, Unknown: 1,
		LatencyP50: 0, LatencyP99: 20 * ms, LatencyMax: 20 * ms, Trips: 1, TimeOpen: 3980 * ms,
		Bursts: 1, Detected: 1, DetectMean: 1020 * ms, DetectMax: 1020 * ms, Span: 6 * time.Second}, res[1])
}

// A refused call with no known outcome before it fails at once.
func TestReplay_SM11_UnknownFirst(t *testing.T) {
	trace := fmt.Sprintf(`{"start":%q,"duration":"0s","outcome":"refused"}`+"\n", t0.Format(time.RFC3339Nano))
	res := replay(t, trace, sim.Config{}, sim.Candidate{Name: "none"})
	assert.Equal(t, 1, res[0].Failed)
	assert.Equal(t, 1, res[0].Unknown)
	assert.Equal(t, time.Duration(0), res[0].LatencyMax)
}
