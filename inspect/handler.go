package inspect

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"
)

// RefreshInterval is how often, at the least, an open page reads the
// status again; it reads it at once after a change (see ServeHTTP).
const RefreshInterval = 500 * time.Millisecond

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"row": func(v view, b BreakerStatus) breakerRow { return breakerRow{V: v, B: b} },
}).Parse(pageHTML))

// breakerRow is what the template of a breaker's row renders.
type breakerRow struct {
	V view
	B BreakerStatus
}

// ServeHTTP serves the page. Mount it where only operators reach it, as
// with net/http/pprof's handlers:
//
//	mux.Handle("/debug/rampart", reg)
//
// A GET serves, by its query:
//
//	(none)           the page, in HTML, with its styles and script inline (no
//	                 external asset: it works offline); it shows a change
//	                 (a transition, a value added or removed, a setting
//	                 tuned) as soon as it happens and reads the status
//	                 again at least every RefreshInterval, and works
//	                 without JavaScript as a snapshot
//	?format=json     the Status, as JSON (indented)
//	?fragment=1      the page's live part alone, as the page's script reads it
//
// Every answer carries, in its X-Rampart-Changes header, how many changes
// the Registry has seen (the page's script reads it). With ?after=N (N
// from a previous answer) the answer waits until that count is no longer
// N, or for RefreshInterval, whichever comes first, so that a reader
// learns of a transition the moment it happens (a long poll); an N that
// is not a count gets 400.
//
// The page and the JSON are never cached (Cache-Control: no-store). A
// method other than GET or HEAD gets 405, an unknown format 400. Each
// request reads the registered values once (see Status), each fleet's
// record bounded by the request's deadline or else DefaultFleetTimeout.
// Safe for concurrent use.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r == nil {
		r = new(Registry) // nothing registered, nothing will change
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "inspect: method not allowed: "+req.Method, http.StatusMethodNotAllowed)
		return
	}
	q := req.URL.Query()
	format := q.Get("format")
	if format != "" && format != "json" && format != "html" {
		http.Error(w, fmt.Sprintf("inspect: unknown format %q: want json or html", format), http.StatusBadRequest)
		return
	}
	var changes uint64
	if a := q.Get("after"); a != "" {
		after, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			http.Error(w, fmt.Sprintf("inspect: bad after %q: want the X-Rampart-Changes of an earlier answer", a), http.StatusBadRequest)
			return
		}
		changes = r.wait(req.Context(), after, RefreshInterval)
	} else {
		changes = r.changes()
	}
	ctx := req.Context()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultFleetTimeout)
		defer cancel()
	}
	s := r.Status(ctx)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Rampart-Changes", strconv.FormatUint(changes, 10))
	var buf bytes.Buffer
	if format == "json" {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s); err != nil {
			http.Error(w, "inspect: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
	} else {
		name := "page"
		if q.Get("fragment") != "" {
			name = "content"
		}
		if err := page.ExecuteTemplate(&buf, name, view{s, RefreshInterval.Milliseconds(), changes}); err != nil {
			http.Error(w, "inspect: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	w.Write(buf.Bytes()) //nolint:errcheck // the client went away
}

// view is what the page's template renders.
type view struct {
	Status
	RefreshMs int64
	Changes   uint64 // the Registry's count of changes, read before Status
}

// Ago says how long before the status t was, as "1.5s" (rounded to a
// tenth of a second under a minute, to the second above), or "" for the
// zero t.
func (v view) Ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := v.Time.Sub(t)
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// Seconds prints a duration in seconds, as the JSON has it, for people:
// "forever" for -1, "" for zero.
func (view) Seconds(s float64) string {
	switch {
	case s == -1:
		return "forever"
	case s == 0:
		return ""
	}
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}
