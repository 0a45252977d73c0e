package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// printTable prints the run's setting, the two clients' summaries side by
// side, and a sparkline per timeline.
func printTable(w io.Writer, r *result) {
	o := r.o
	m := o.model()
	fmt.Fprintf(w, "backend: %d workers x %v a request (%.0f requests/s), a queue of %d\n",
		o.workers, o.work, float64(o.workers)*float64(time.Second)/float64(o.work), o.queue)
	fmt.Fprintf(w, "fault:   its downstream stalls from %v to %v (a worker waits %v on it, then answers 503)\n",
		m.faultStart, m.faultEnd, o.stall)
	fmt.Fprintf(w, "load:    %g caller requests/s to each client for %v, %v per attempt\n", o.rate, o.total(), o.attemptTimeout)
	fmt.Fprintf(w, "naive:   %d retries at once\n", o.naiveRetries)
	fmt.Fprintf(w, "rampart: breaker (%d consecutive failures trip it, cool-down %v), %d attempts within a retry budget (%.0f%% + %d/s)\n\n",
		tripAfter, o.coolDown, rampartAttempts, 100*budgetRatio, budgetFloor)

	n, rp := r.Naive, r.Rampart
	row := func(name, a, b string) { fmt.Fprintf(w, "%-28s %16s %16s\n", name, a, b) }
	num := func(v int64) string { return fmt.Sprint(v) }
	row("", "naive", "rampart")
	row("caller requests", num(n.CallerRequests), num(rp.CallerRequests))
	row("caller successes", num(n.Successes), num(rp.Successes))
	row("caller failures", num(n.Failures), num(rp.Failures))
	row("caller success rate", pct(n.SuccessRate), pct(rp.SuccessRate))
	row("outage (fault "+seconds(r.FaultMs)+")", outageText(n), outageText(rp))
	row("recovery to first success", recoveryText(n.RecoveryMs), recoveryText(rp.RecoveryMs))
	row("p50 latency", fmt.Sprintf("%.1f ms", n.P50ms), fmt.Sprintf("%.1f ms", rp.P50ms))
	row("p99 latency", fmt.Sprintf("%.1f ms", n.P99ms), fmt.Sprintf("%.1f ms", rp.P99ms))
	row("calls failed fast", num(n.FastFails), num(rp.FastFails))
	row("backend hits", num(n.BackendHits), num(rp.BackendHits))
	row("backend hits during fault", num(n.BackendHitsOutage), num(rp.BackendHitsOutage))
	row("backend goodput", num(n.BackendGoodput), num(rp.BackendGoodput))
	row("backend work wasted", num(n.BackendWasted), num(rp.BackendWasted))
	row("calls lost", num(n.Lost), num(rp.Lost))
	b := rp.Breaker
	row("breaker calls (attempts)", "-", num(b.Calls))
	row("  succeeded", "-", num(b.Successes))
	row("  failed", "-", num(b.Failures))
	row("  failed fast", "-", num(b.FailedFast))
	fmt.Fprintf(w, "\noutage: from the fault's start until every 1 s window of calls succeeds at least %.0f%%.\n", 100*outageRate)
	if n.BackendHitsOutage > 0 {
		fmt.Fprintf(w, "During the fault the rampart client sent the backend %.1f%% of the naive client's requests.\n",
			100*float64(rp.BackendHitsOutage)/float64(n.BackendHitsOutage))
	}
	if lag := max(n.StartLagP99ms, rp.StartLagP99ms); lag >= ms(busyLag) {
		fmt.Fprintf(w, "This machine was busy: calls started %.0f ms late (p99). Calls a healthy backend answers in time can\n"+
			"then outlast their %v attempt timeout, which lowers the rampart client's figures.\n", lag, o.attemptTimeout)
	}

	fmt.Fprintf(w, "\nper second, 0 to %v (rows scaled to their peak over both clients; · zero, blank no calls):\n", o.total())
	width := max(o.seconds(), len("naive")) // fmt pads by runes, as sparklines need
	spark := func(name string, a, b []float64, peak float64) {
		if peak == 0 {
			peak = max(slicePeak(a), slicePeak(b))
		}
		fmt.Fprintf(w, "%-20s %-*s   %s\n", name, width, sparkline(a, peak), sparkline(b, peak))
	}
	fmt.Fprintf(w, "%-20s %-*s   %s\n", "", width, "naive", "rampart")
	fault := faultSeconds(m, o.seconds())
	spark("fault", fault, fault, 1)
	spark("caller requests", floats(n.Timeline.CallerRequests), floats(rp.Timeline.CallerRequests), 0)
	spark("backend arrivals", floats(n.Timeline.BackendArrivals), floats(rp.Timeline.BackendArrivals), 0)
	spark("backend goodput", floats(n.Timeline.Goodput), floats(rp.Timeline.Goodput), 0)
	spark("backend wasted", floats(n.Timeline.Wasted), floats(rp.Timeline.Wasted), 0)
	spark("caller success rate", ratios(n.Timeline.SuccessRate), ratios(rp.Timeline.SuccessRate), 1)
	fmt.Fprintf(w, "%-20s %-*s   %s\n", "breaker not closed", width, "", sparkline(rp.Timeline.BreakerOpen, 1))
}

// sparkline draws one character per value, scaled to peak: · for zero,
// then ▁ to █, and a blank for NaN (no data).
func sparkline(v []float64, peak float64) string {
	const bars = "▁▂▃▄▅▆▇█"
	levels := []rune(bars)
	var b strings.Builder
	for _, x := range v {
		if math.IsNaN(x) {
			b.WriteRune(' ')
			continue
		}
		if x <= 0 || peak <= 0 {
			b.WriteRune('·')
			continue
		}
		i := int(math.Ceil(x/peak*float64(len(levels)))) - 1
		b.WriteRune(levels[max(0, min(i, len(levels)-1))])
	}
	return b.String()
}

func faultSeconds(m model, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		from, to := time.Duration(i)*time.Second, time.Duration(i+1)*time.Second
		if from < m.faultEnd && to > m.faultStart {
			v[i] = 1
		}
	}
	return v
}

func floats(v []int64) []float64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return f
}

func ratios(v []ratio) []float64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return f
}

func slicePeak(v []float64) float64 {
	var p float64
	for _, x := range v {
		p = max(p, x)
	}
	return p
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func seconds(msv float64) string { return fmt.Sprintf("%.1f s", msv/1000) }

func outageText(s summary) string {
	if !s.OutageOver {
		return "never over"
	}
	return seconds(s.OutageMs)
}

func recoveryText(msv float64) string {
	if msv < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f ms", msv)
}
