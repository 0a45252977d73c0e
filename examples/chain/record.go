package main

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rampart-go/rampart"
)

// window is what one second of a run saw.
type window struct {
	Requests [3]int        `json:"requests"` // caller requests sent in it, by criticality (sheddable, default, critical)
	OK       [3]int        `json:"ok"`       // of those, answered 200 in time
	AtA      int           `json:"attempts_at_a"`
	AtB      int           `json:"attempts_at_b"`
	AtC      int           `json:"attempts_at_c"`
	WorkC    time.Duration `json:"work_at_c_ns"`
	WastedC  time.Duration `json:"wasted_at_c_ns"` // C's work after the caller's deadline
}

// recorder counts a run by 1s windows from start.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	w     []window
}

func newRecorder(start time.Time, cfg config) *recorder {
	n := int((cfg.healthy+cfg.fault+cfg.after)/time.Second) + 1
	return &recorder{start: start, w: make([]window, n)}
}

// at returns the window of t, with mu held; times past the last are the
// last.
func (r *recorder) at(t time.Time) *window {
	i := max(0, min(int(t.Sub(r.start)/time.Second), len(r.w)-1))
	return &r.w[i]
}

func critIndex(c rampart.Criticality) int { return int(c) + 1 }

// caller records a caller request, in the window it was sent.
func (r *recorder) caller(sent time.Time, c rampart.Criticality, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.at(sent)
	w.Requests[critIndex(c)]++
	if ok {
		w.OK[critIndex(c)]++
	}
}

// countAt counts every request that reaches the tier named name.
func (r *recorder) countAt(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		w0 := r.at(time.Now())
		switch name {
		case "A":
			w0.AtA++
		case "B":
			w0.AtB++
		default:
			w0.AtC++
		}
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

// work records a stretch of C's work on a request: all of it is C's work,
// the part after the caller's deadline is wasted.
func (r *recorder) work(start, end time.Time, in *http.Request) {
	var wasted time.Duration
	if ns, err := strconv.ParseInt(in.Header.Get(deadlineHeader), 10, 64); err == nil {
		if d := time.Unix(0, ns); end.After(d) {
			wasted = end.Sub(later(start, d))
		}
	}
	r.mu.Lock()
	w := r.at(start)
	w.WorkC += end.Sub(start)
	w.WastedC += wasted
	r.mu.Unlock()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
