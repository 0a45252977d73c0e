package sim

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/rampart-go/rampart/internal/nilvalue"
)

// WriteTable writes results as a table, one row per result, with a legend
// after it: the table the command rampart-sim prints, and package shadow's
// too, so a replay's candidates and a shadow's read alike. A delay over no
// event, and latencies not measured ([Result.LatencyMeasured] false: a
// shadow's), print as "-"; measured latencies print even when they are 0.
// A nil w (a typed nil too) is an error; so is any error writing to w.
func WriteTable(w io.Writer, results []Result) error {
	if w == nil || nilvalue.Is(w) {
		return errors.New("sim: WriteTable: nil io.Writer")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "candidate\tsent\tok\tfailed\trefused\tlost\tunknown\tretries\tbudget-refused\ttrips\topen\tdetected\tdetect\trecover\tp50\tp99\tmax\t")
	for _, r := range results {
		measured := r.LatencyMeasured
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Name, r.Sent, r.Succeeded, r.Failed, r.Refused, r.LostGoodput, r.Unknown, r.RetriesSent, r.RetriesRefusedByBudget,
			r.Trips, seconds(r.TimeOpen, r.Trips), r.Detected, r.Bursts, seconds(r.DetectMean, r.Detected), seconds(r.RecoverMean, r.Recovered),
			latency(r.LatencyP50, measured), latency(r.LatencyP99, measured), latency(r.LatencyMax, measured))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, `
sent: attempts that reached the dependency; ok, failed: what callers got
(failed: errors and timeouts); refused: calls the breaker refused; lost:
refused calls recorded as successes; unknown: calls sent whose outcome the
trace cannot know (the live breaker refused them; replayed as the
dependency was last recorded); retries: retries sent; budget-refused:
calls whose retries the budget stopped; open: time Open; detected: failure
bursts (calls that failed or took the timeout) the breaker opened during;
detect, recover: mean delay from a burst's start until the breaker opened,
and from its end until it closed ("-": it never did); p50, p99, max: the
latency callers felt, from the call's recorded start to its result,
retries and backoff included ("-": not measured).`)
	return err
}

// seconds formats d, a total or mean over n events, in seconds with one
// decimal, or "-" when there was no event.
func seconds(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// latency formats d rounded to three significant digits, in the unit
// time.Duration's String picks ("12.3ms", "1.5s"), or "-" when not
// measured.
func latency(d time.Duration, measured bool) string {
	if !measured {
		return "-"
	}
	unit := time.Duration(1)
	for d/unit >= 1000 {
		unit *= 10
	}
	return ((d + unit/2) / unit * unit).String()
}
