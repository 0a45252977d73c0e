package sim_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/sim"
)

// Replay a short trace (a call every second: one success, four failures,
// five successes) through no breaker and a breaker that trips on two
// failures in a row.
func ExampleReplay() {
	var trace strings.Builder
	start := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	for i, o := range "SFFFFSSSSS" {
		outcome := "success"
		if o == 'F' {
			outcome = "failure"
		}
		fmt.Fprintf(&trace, `{"start":%q,"duration":"100ms","outcome":%q}`+"\n",
			start.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), outcome)
	}
	results, err := sim.Replay(sim.NewTraceReader(strings.NewReader(trace.String()), "trace.jsonl"), []sim.Candidate{
		{Name: "none"},
		{Name: "2 in a row", Breaker: &circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 2},
			CoolDown: 2 * time.Second,
		}},
	}, sim.Config{BurstMin: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Printf("%s: sent %d, failed %d, refused %d (lost %d), open %v, burst detected after %v, recovered after %v\n",
			r.Name, r.Sent, r.Failed, r.Refused, r.LostGoodput, r.TimeOpen, r.DetectMean, r.RecoverMean)
	}
	// Output:
	// none: sent 10, failed 4, refused 0 (lost 0), open 0s, burst detected after 0s, recovered after 0s
	// 2 in a row: sent 8, failed 2, refused 2 (lost 0), open 2s, burst detected after 1.1s, recovered after 100ms
}
