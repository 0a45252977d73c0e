package main

import (
	"time"
)

// summary is a run's figures: the four targets, and the windows.
type summary struct {
	Run string `json:"run"`
	// MaxAttemptsAtCPerRequest is the largest, over 1s windows, of the
	// attempts arriving at C divided by the callers' requests sent.
	MaxAttemptsAtCPerRequest float64 `json:"max_attempts_at_c_per_request"`
	// WastedShareAtC is C's work after the caller's deadline over all
	// of C's work.
	WastedShareAtC float64 `json:"wasted_share_at_c"`
	// MinCriticalOK is the smallest, over windows, share of critical
	// requests answered 200 in time.
	MinCriticalOK float64 `json:"min_critical_ok"`
	// Recovered is how long after the brownout ended every later window
	// succeeded at least 95%; -1 if it never did.
	Recovered time.Duration `json:"recovered_ns"`
	// OK is the share of all requests answered 200 in time, by
	// criticality: sheddable, default, critical.
	OK      [3]float64 `json:"ok"`
	Windows []window   `json:"windows"`
}

func share(ok, n int) float64 {
	if n == 0 {
		return 1
	}
	return float64(ok) / float64(n)
}

func summarize(name string, cfg config, rec *recorder) summary {
	s := summary{Run: name, MinCriticalOK: 1, Recovered: -1}
	var work, wasted time.Duration
	var n, ok [3]int
	var ws []window
	for _, w := range rec.w {
		req := w.Requests[0] + w.Requests[1] + w.Requests[2]
		if req == 0 {
			continue
		}
		ws = append(ws, w)
		s.MaxAttemptsAtCPerRequest = max(s.MaxAttemptsAtCPerRequest, float64(w.AtC)/float64(req))
		work += w.WorkC
		wasted += w.WastedC
		s.MinCriticalOK = min(s.MinCriticalOK, share(w.OK[2], w.Requests[2]))
		for i := range 3 {
			n[i] += w.Requests[i]
			ok[i] += w.OK[i]
		}
	}
	s.Windows = ws
	if work > 0 {
		s.WastedShareAtC = float64(wasted) / float64(work)
	}
	for i := range 3 {
		s.OK[i] = share(ok[i], n[i])
	}
	end := int((cfg.healthy + cfg.fault) / time.Second)
	good := len(ws)
	for i := len(ws) - 1; i >= end; i-- {
		w := ws[i]
		if share(w.OK[0]+w.OK[1]+w.OK[2], w.Requests[0]+w.Requests[1]+w.Requests[2]) < 0.95 {
			break
		}
		good = i
	}
	if good < len(ws) {
		s.Recovered = time.Duration(good)*time.Second - (cfg.healthy + cfg.fault)
	}
	return s
}
