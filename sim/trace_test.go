package sim_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/sim"
	"github.com/rampart-go/rampart/sim/internal/tracegen"
)

const good = `{"start":"2026-12-01T15:00:00Z","duration":"10ms","outcome":"success"}`

// Each bad line is an error naming the file, the line and the field.
func TestTraceReader_SM6_BadLines(t *testing.T) {
	for _, tc := range []struct {
		name, line, want string
	}{
		{"malformed", `{"start":`, `trace.jsonl:2: malformed JSON: unexpected end of JSON input`},
		{"not an object", `[1]`, `trace.jsonl:2: a line must be a JSON object, got array`},
		{"wrong type", `{"start":"2026-12-01T15:00:01Z","duration":10,"outcome":"success"}`, `trace.jsonl:2: duration: must be a JSON string, got number`},
		{"missing start", `{"duration":"1ms","outcome":"success"}`, `trace.jsonl:2: start: missing`},
		{"missing duration", `{"start":"2026-12-01T15:00:01Z","outcome":"success"}`, `trace.jsonl:2: duration: missing`},
		{"missing outcome", `{"start":"2026-12-01T15:00:01Z","duration":"1ms"}`, `trace.jsonl:2: outcome: missing`},
		{"bad start", `{"start":"yesterday","duration":"1ms","outcome":"success"}`, `trace.jsonl:2: start: must be an RFC 3339 time such as 2026-12-01T15:00:00.5Z, got "yesterday"`},
		{"backwards", `{"start":"2026-12-01T14:58:59.5Z","duration":"1ms","outcome":"success"}`, `trace.jsonl:2: start: goes backwards more than the reorder window (1m0s): 2026-12-01T14:58:59.5Z is before line 1's 2026-12-01T15:00:00Z`},
		{"bad duration", `{"start":"2026-12-01T15:00:01Z","duration":"soon","outcome":"success"}`, `trace.jsonl:2: duration: must be a Go duration >= 0 such as 12.5ms, got "soon"`},
		{"negative duration", `{"start":"2026-12-01T15:00:01Z","duration":"-1ms","outcome":"success"}`, `trace.jsonl:2: duration: must be a Go duration >= 0 such as 12.5ms, got "-1ms"`},
		{"unknown outcome", `{"start":"2026-12-01T15:00:01Z","duration":"1ms","outcome":"meh"}`, `trace.jsonl:2: outcome: must be "success", "failure", "ignored" or "refused", got "meh"`},
		{"bad start, nothing else", `{"start":"yesterday"}`, `trace.jsonl:2: start: must be an RFC 3339 time such as 2026-12-01T15:00:00.5Z, got "yesterday"`},
		{"bad duration, no outcome", `{"start":"2026-12-01T15:00:01Z","duration":"soon"}`, `trace.jsonl:2: duration: must be a Go duration >= 0 such as 12.5ms, got "soon"`},
		{"negative attempt", `{"start":"2026-12-01T15:00:01Z","duration":"1ms","outcome":"success","attempt":-1}`, `trace.jsonl:2: attempt: must be 1 or more (absent means 1), got -1`},
		{"attempt not a number", `{"start":"2026-12-01T15:00:01Z","duration":"1ms","outcome":"success","attempt":"2"}`, `trace.jsonl:2: attempt: must be a whole number, got string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The first line is still held (a later line could start
			// before it) when the second is read.
			r := sim.NewTraceReader(strings.NewReader(good+"\n"+tc.line+"\n"+good+"\n"), "trace.jsonl")
			_, err := r.Next()
			assert.EqualError(t, err, tc.want)
			var te *sim.TraceError
			require.True(t, errors.As(err, &te))
			assert.Equal(t, 2, te.Line)

			// Replay stops at the bad line with the same error.
			_, err = sim.Replay(sim.NewTraceReader(strings.NewReader(good+"\n"+tc.line+"\n"), "trace.jsonl"), []sim.Candidate{{Name: "x"}}, sim.Config{})
			assert.EqualError(t, err, tc.want)
		})
	}
}

// With Skip, bad lines are skipped and counted; blank lines are not bad.
func TestTraceReader_SM6_SkipCounts(t *testing.T) {
	r := sim.NewTraceReader(strings.NewReader(good+"\n\n{oops\n"+`{"start":"2026-12-01T15:00:01Z","duration":"1ms","outcome":"failure","class":"timeout","key":"k","extra":1}`+"\n"), "t")
	r.Skip = true
	var got []record.Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, e)
	}
	assert.Equal(t, 1, r.Skipped)
	assert.Equal(t, []record.Entry{
		{Start: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), Duration: 10 * time.Millisecond, Outcome: record.Success, Attempt: 1},
		{Start: time.Date(2026, 12, 1, 15, 0, 1, 0, time.UTC), Duration: time.Millisecond, Outcome: record.Failure, Class: "timeout", Key: "k", Attempt: 1},
	}, got)
}

// Bad candidates are errors naming the candidate and the field.
func TestReplay_SM7_BadCandidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		cand sim.Candidate
		want string
	}{
		{"no name", sim.Candidate{}, "sim: a candidate's Name must not be empty"},
		{"negative timeout", sim.Candidate{Name: "a", Timeout: -1}, `candidate "a": Timeout must be 0 (none) or positive, got -1ns`},
		{"budget and no budget", sim.Candidate{Name: "a", Retry: &sim.Retry{NoBudget: true, Budget: &budget.Config{}}}, `candidate "a": Retry.Budget must be nil with Retry.NoBudget`},
		{"bad policy", sim.Candidate{Name: "a", Breaker: &circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: -1}}}, `candidate "a": circuitbreaker: Consecutive.Failures must be >= 0, got -1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sim.Replay(sim.NewTraceReader(strings.NewReader(good), "t"), []sim.Candidate{tc.cand}, sim.Config{})
			assert.EqualError(t, err, tc.want)
		})
	}
}

// A bad line after calls still in flight: Replay lets them end and
// leaves no goroutine behind.
func TestReplay_SM6_ErrorLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	trace := `{"start":"2026-12-01T15:00:00Z","duration":"1h","outcome":"success"}` + "\n{oops\n"
	_, err := sim.Replay(sim.NewTraceReader(strings.NewReader(trace), "t"), []sim.Candidate{{Name: "x", Timeout: time.Minute}}, sim.Config{})
	assert.EqualError(t, err, "t:2: malformed JSON: invalid character 'o' looking for beginning of object key string")
}

// Lines in another field order, or with escapes, read as the recorder's
// own lines do.
func TestTraceReader_SM6_AnyJSONForm(t *testing.T) {
	r := sim.NewTraceReader(strings.NewReader(
		`{"outcome":"failure","key":"a\"b","duration":"1ms","start":"2026-12-01T15:00:00Z","class":"x"}`+"\n"+
			`{"start":"2026-12-01T15:00:00Z","duration":"1ms","outcome":"failure","class":"x","key":"a\u0022b"}`+"\n"), "t")
	a, err := r.Next()
	require.NoError(t, err)
	b, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Equal(t, `a"b`, a.Key)
}

// line returns a trace line starting at t0 plus at.
func traceLine(at time.Duration, outcome string) string {
	return fmt.Sprintf(`{"start":%q,"duration":"1ms","outcome":%q}`+"\n", t0.Add(at).Format(time.RFC3339Nano), outcome)
}

// readAll reads r to its end or first error.
func readAll(r *sim.TraceReader) ([]time.Duration, error) {
	var got []time.Duration
	for {
		e, err := r.Next()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, e.Start.Sub(t0))
	}
}

// Lines out of order by up to the reorder window come back in order of
// start (equal starts in line order); a line further back is an error
// naming the file, the line and the field, or skipped and counted with
// Skip; with Reorder zero any step back is.
func TestTraceReader_SM6_ReorderWindow(t *testing.T) {
	s := time.Second
	inWindow := traceLine(100*time.Millisecond, "success") + traceLine(0, "failure") + traceLine(30*s, "success") +
		traceLine(5*s, "success") + traceLine(65*s, "success") + traceLine(5*s+1, "failure") + traceLine(5*s, "failure")
	r := sim.NewTraceReader(strings.NewReader(inWindow), "t")
	assert.Equal(t, sim.DefaultReorder, r.Reorder)
	got, err := readAll(r)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 5 * s, 5 * s, 5*s + 1, 30 * s, 65 * s}, got)

	// The first entry is returned as soon as a start more than a minute
	// later is read; then line 4 goes back beyond the window.
	beyond := traceLine(0, "success") + traceLine(60*s, "success") + traceLine(61*s, "success") + traceLine(999*time.Millisecond, "success") + traceLine(62*s, "success")
	got, err = readAll(sim.NewTraceReader(strings.NewReader(beyond), "t"))
	assert.Equal(t, []time.Duration{0}, got)
	assert.EqualError(t, err, `t:4: start: goes backwards more than the reorder window (1m0s): 2026-12-01T15:00:00.999Z is before line 3's 2026-12-01T15:01:01Z`)
	var te *sim.TraceError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, sim.TraceError{File: "t", Line: 4, Field: "start", Err: te.Err}, *te)

	r = sim.NewTraceReader(strings.NewReader(beyond), "t")
	r.Skip = true
	got, err = readAll(r)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{0, 60 * s, 61 * s, 62 * s}, got)
	assert.Equal(t, 1, r.Skipped)

	r = sim.NewTraceReader(strings.NewReader(inWindow), "t")
	r.Reorder = 0
	got, err = readAll(r)
	assert.Empty(t, got)
	assert.EqualError(t, err, `t:2: start: goes backwards: 2026-12-01T15:00:00Z is before line 1's 2026-12-01T15:00:00.1Z`)

	r = sim.NewTraceReader(strings.NewReader(inWindow), "t")
	r.Reorder = 2 * s
	got, err = readAll(r)
	assert.Equal(t, []time.Duration{0, 100 * time.Millisecond}, got)
	assert.EqualError(t, err, `t:4: start: goes backwards more than the reorder window (2s): 2026-12-01T15:00:05Z is before line 3's 2026-12-01T15:00:30Z`)

	r = sim.NewTraceReader(strings.NewReader(inWindow), "t")
	r.Reorder = -1
	_, err = r.Next()
	assert.EqualError(t, err, "sim: TraceReader.Reorder must be 0 (strict order) or positive (the default is 1m0s), got -1ns")
}

// The sample traces are what the generator makes (go generate ./sim
// rewrites them), and each reads without error: 3000 calls, 5 minutes.
func TestSamples_SM9_UpToDate(t *testing.T) {
	for _, s := range tracegen.Scenarios {
		t.Run(s.Name, func(t *testing.T) {
			want, err := io.ReadAll(tracegen.Reader(s, 3000))
			require.NoError(t, err)
			got, err := os.ReadFile("testdata/" + s.Name + ".jsonl")
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "testdata/%s.jsonl differs from the generator's: run go generate ./sim", s.Name)

			tr := sim.NewTraceReader(bytes.NewReader(got), s.Name)
			n := 0
			for {
				_, err := tr.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				n++
			}
			assert.Equal(t, 3000, n)
		})
	}
}

// TestTraceReader_NZ1_NilAndZeroReader: Next of a nil or zero
// TraceReader, or of one over a nil io.Reader, is an error saying which;
// so is Replay of a nil reader. A nil *TraceError says <nil>.
func TestTraceReader_NZ1_NilAndZeroReader(t *testing.T) {
	next := func(tr *sim.TraceReader) any {
		e, err := tr.Next()
		return []any{e, err.Error()}
	}
	var traceErr *sim.TraceError
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "nil Next", Call: func() any { return next(nil) }, Want: []any{record.Entry{}, "sim: Next of a nil *TraceReader (make one with sim.NewTraceReader)"}},
		{Name: "zero Next", Call: func() any { return next(new(sim.TraceReader)) }, Want: []any{record.Entry{}, "sim: TraceReader must be made by NewTraceReader, got a zero TraceReader"}},
		{Name: "nil io.Reader", Call: func() any { return next(sim.NewTraceReader(nil, "calls.jsonl")) }, Want: []any{record.Entry{}, `sim: trace "calls.jsonl": NewTraceReader was given a nil io.Reader`}},
		{Name: "typed nil io.Reader", Call: func() any { return next(sim.NewTraceReader((*bytes.Buffer)(nil), "calls.jsonl")) }, Want: []any{record.Entry{}, `sim: trace "calls.jsonl": NewTraceReader was given a nil io.Reader`}},
		{Name: "Replay", Call: func() any {
			res, err := sim.Replay(nil, []sim.Candidate{{Name: "a"}}, sim.Config{})
			return []any{res, err.Error()}
		}, Want: []any{[]sim.Result(nil), "sim: Replay: nil *TraceReader (make one with sim.NewTraceReader)"}},
		{Name: "TraceError.Error", Call: func() any { return traceErr.Error() }, Want: "<nil>"},
		{Name: "TraceError.Unwrap", Call: func() any { return traceErr.Unwrap() }, Want: nil},
	})
}
