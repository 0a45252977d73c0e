package sim

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/record"
)

// maxLine is the longest trace line read, in bytes.
const maxLine = 1 << 20

// TraceError is a bad line of a trace: it names the file, the line (from
// 1) and the field, when one field is at fault. Its methods accept a nil
// *TraceError: Error is "<nil>" (as for a nil [*net.OpError]), Unwrap nil.
type TraceError struct {
	// File is the name the trace was opened with.
	File string
	// Line is the line number, from 1.
	Line int
	// Field is the JSON field at fault ("start", "duration", "outcome"),
	// or empty when the line as a whole is (malformed JSON).
	Field string
	// Err says what is wrong.
	Err error
}

// Error returns "file:line: field: what is wrong".
func (e *TraceError) Error() string {
	if e == nil {
		return "<nil>"
	}
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %s: %v", e.File, e.Line, e.Field, e.Err)
}

// Unwrap returns Err.
func (e *TraceError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// DefaultReorder is the reorder window a [TraceReader] starts with.
const DefaultReorder = time.Minute

// TraceReader reads a trace, one [record.Entry] per line (JSON Lines, the
// format [record.Recorder] writes), streaming. Blank lines are ignored.
// Fields it does not know are ignored, so that newer recorders can add
// some; the fields start, duration and outcome are required.
//
// Lines need not be in order of start: a recorder writes a call when it
// returns, so a long call started early comes after short calls started
// later, and a step of the wall clock while recording moves starts back.
// The reader holds the entries of the last Reorder of starts in a heap
// and returns them in order of start (entries with equal starts in line
// order): an entry is returned once a line starting more than Reorder
// after it has been read, or at the end of the trace. Memory therefore
// holds the entries started within Reorder of the latest start, not the
// whole trace. A start more than Reorder before the latest start read is
// a bad line.
//
// A TraceReader is not safe for concurrent use. Make one with
// [NewTraceReader]: Next of a nil or zero TraceReader, or of one made over
// a nil io.Reader, returns an error saying so.
type TraceReader struct {
	name string
	sc   *bufio.Scanner // nil for a zero TraceReader, or one over a nil io.Reader
	line int
	// latest is the latest start read so far, and latestLine its line.
	latest     time.Time
	latestLine int
	started    bool
	pending    entryHeap
	seq        uint64 // lines accepted, to keep line order among equal starts
	eof        bool

	// Reorder is how far back in time a line may start, compared with the
	// latest start read before it, and still be returned in order. It is
	// [DefaultReorder] (one minute) when the reader is made; zero makes
	// the reader strict: any start earlier than a previous line's is a bad
	// line. Negative is an error (Next returns it). Set it before the
	// first Next.
	Reorder time.Duration
	// Skip, when true, makes Next skip a bad line instead of returning
	// its error; Skipped counts them.
	Skip bool
	// Skipped is the number of bad lines skipped.
	Skipped int

	nilReader bool // made by NewTraceReader over a nil io.Reader
}

// NewTraceReader returns a reader of the trace in r; name (a file name)
// is used in errors. A nil r (a typed nil too) makes a reader whose Next
// returns an error naming it.
func NewTraceReader(r io.Reader, name string) *TraceReader {
	if r == nil || nilvalue.Is(r) {
		return &TraceReader{name: name, nilReader: true, Reorder: DefaultReorder}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	return &TraceReader{name: name, sc: sc, Reorder: DefaultReorder}
}

// pendingEntry is an entry read and not yet returned.
type pendingEntry struct {
	e   record.Entry
	seq uint64
}

// entryHeap orders pending entries by start, then by line.
type entryHeap []pendingEntry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if c := h[i].e.Start.Compare(h[j].e.Start); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}
func (h entryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push and Pop are unused: the reader appends and removes in place, with
// heap.Fix, so that no entry is boxed in an interface.
func (h *entryHeap) Push(any) { panic("sim: entryHeap.Push is unused") }
func (h *entryHeap) Pop() any { panic("sim: entryHeap.Pop is unused") }
func (h *entryHeap) add(p pendingEntry) {
	*h = append(*h, p)
	heap.Fix(h, len(*h)-1)
}
func (h *entryHeap) take() record.Entry {
	old := *h
	e := old[0].e
	n := len(old) - 1
	old[0] = old[n]
	old[n] = pendingEntry{} // drop the key's reference
	*h = old[:n]
	if n > 0 {
		heap.Fix(h, 0)
	}
	return e
}

// line is the JSON form of one trace line.
type line struct {
	Start    *string `json:"start"`
	Duration *string `json:"duration"`
	Outcome  *string `json:"outcome"`
	Class    string  `json:"class"`
	Key      string  `json:"key"`
	Attempt  int     `json:"attempt"`
}

// fastLine reads a line in the exact form record.Entry.AppendJSON writes
// (fields in its order, strings without escapes), much faster than
// encoding/json; ok is false for any other line, which encoding/json then
// reads.
func fastLine(b []byte) (l line, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{`))
	if !ok {
		return l, false
	}
	fields := []struct {
		name     string
		dst      *string
		required bool
	}{
		{`"start":"`, nil, true},
		{`"duration":"`, nil, true},
		{`"outcome":"`, nil, true},
		{`"class":"`, &l.Class, false},
		{`"key":"`, &l.Key, false},
	}
	var start, dur, outcome string
	fields[0].dst, fields[1].dst, fields[2].dst = &start, &dur, &outcome
	first := true
	for _, f := range fields {
		r := rest
		if !first {
			var ok bool
			if r, ok = bytes.CutPrefix(r, []byte(",")); !ok {
				if f.required {
					return l, false
				}
				continue
			}
		}
		r, ok := bytes.CutPrefix(r, []byte(f.name))
		if !ok {
			if f.required {
				return l, false
			}
			continue
		}
		i := bytes.IndexByte(r, '"')
		if i < 0 || bytes.IndexByte(r[:i], '\\') >= 0 {
			return l, false
		}
		*f.dst = string(r[:i])
		rest, first = r[i+1:], false
	}
	if string(rest) != "}" {
		return l, false
	}
	l.Start, l.Duration, l.Outcome = &start, &dur, &outcome
	return l, true
}

// Next returns the next entry in order of start, or io.EOF after the
// last. A bad line is a [*TraceError]: malformed JSON, a missing or
// malformed field (the first in the line's order: start, duration,
// outcome, attempt), a negative duration, an outcome that is not one of
// [record.Outcome]'s values, a negative attempt, or a start more than Reorder before the latest start read
// so far (any earlier start, when Reorder is zero). It is returned as
// soon as the line is read, before entries of earlier lines still held.
// With Skip set, bad lines are counted and skipped instead. An error
// reading r is returned as it is.
func (t *TraceReader) Next() (record.Entry, error) {
	switch {
	case t == nil:
		return record.Entry{}, errors.New("sim: Next of a nil *TraceReader (make one with sim.NewTraceReader)")
	case t.nilReader:
		return record.Entry{}, fmt.Errorf("sim: trace %q: NewTraceReader was given a nil io.Reader", t.name)
	case t.sc == nil:
		return record.Entry{}, errors.New("sim: TraceReader must be made by NewTraceReader, got a zero TraceReader")
	}
	if t.Reorder < 0 {
		return record.Entry{}, fmt.Errorf("sim: TraceReader.Reorder must be 0 (strict order) or positive (the default is %v), got %v", DefaultReorder, t.Reorder)
	}
	for !t.eof && (len(t.pending) == 0 || t.latest.Sub(t.pending[0].e.Start) <= t.Reorder) {
		if err := t.read(); err != nil {
			return record.Entry{}, err
		}
	}
	if len(t.pending) == 0 {
		return record.Entry{}, io.EOF
	}
	return t.pending.take(), nil
}

// read reads the next good line into the heap, or sets eof.
func (t *TraceReader) read() error {
	for t.sc.Scan() {
		t.line++
		b := bytes.TrimSpace(t.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		e, err := t.parse(b)
		if err == nil {
			if !t.started || e.Start.After(t.latest) {
				t.latest, t.latestLine, t.started = e.Start, t.line, true
			}
			t.seq++
			t.pending.add(pendingEntry{e: e, seq: t.seq})
			return nil
		}
		if !t.Skip {
			return err
		}
		t.Skipped++
	}
	if err := t.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &TraceError{File: t.name, Line: t.line + 1, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
		}
		return err
	}
	t.eof = true
	return nil
}

func (t *TraceReader) parse(b []byte) (record.Entry, error) {
	bad := func(field string, err error) error {
		return &TraceError{File: t.name, Line: t.line, Field: field, Err: err}
	}
	l, ok := fastLine(b)
	if !ok {
		if err := json.Unmarshal(b, &l); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field == "attempt" {
				return record.Entry{}, bad(te.Field, fmt.Errorf("must be a whole number, got %s", te.Value))
			}
			if errors.As(err, &te) && te.Field != "" {
				return record.Entry{}, bad(te.Field, fmt.Errorf("must be a JSON string, got %s", te.Value))
			}
			if errors.As(err, &te) {
				return record.Entry{}, bad("", fmt.Errorf("a line must be a JSON object, got %s", te.Value))
			}
			return record.Entry{}, bad("", fmt.Errorf("malformed JSON: %v", err))
		}
	}
	// Fields are checked in the order of a line, each whole (present and
	// well formed) before the next, so the error names the first field at
	// fault.
	var e record.Entry
	if l.Start == nil {
		return e, bad("start", errors.New("missing"))
	}
	var err error
	if e.Start, err = time.Parse(time.RFC3339Nano, *l.Start); err != nil {
		return e, bad("start", fmt.Errorf("must be an RFC 3339 time such as 2026-12-01T15:00:00.5Z, got %q", *l.Start))
	}
	if t.started && t.latest.Sub(e.Start) > t.Reorder {
		if t.Reorder == 0 {
			return e, bad("start", fmt.Errorf("goes backwards: %s is before line %d's %s", *l.Start, t.latestLine, t.latest.Format(time.RFC3339Nano)))
		}
		return e, bad("start", fmt.Errorf("goes backwards more than the reorder window (%v): %s is before line %d's %s", t.Reorder, *l.Start, t.latestLine, t.latest.Format(time.RFC3339Nano)))
	}
	if l.Duration == nil {
		return e, bad("duration", errors.New("missing"))
	}
	if e.Duration, err = time.ParseDuration(*l.Duration); err != nil || e.Duration < 0 {
		return e, bad("duration", fmt.Errorf("must be a Go duration >= 0 such as 12.5ms, got %q", *l.Duration))
	}
	if l.Outcome == nil {
		return e, bad("outcome", errors.New("missing"))
	}
	switch o := record.Outcome(*l.Outcome); o {
	case record.Success, record.Failure, record.Ignored, record.Refused:
		e.Outcome = o
	default:
		return e, bad("outcome", fmt.Errorf("must be %q, %q, %q or %q, got %q", record.Success, record.Failure, record.Ignored, record.Refused, *l.Outcome))
	}
	if l.Attempt < 0 {
		return e, bad("attempt", fmt.Errorf("must be 1 or more (absent means 1), got %d", l.Attempt))
	}
	e.Class, e.Key, e.Attempt = l.Class, l.Key, max(l.Attempt, 1)
	return e, nil
}
