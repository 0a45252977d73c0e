package sim_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/sim"
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
		{"backwards", `{"start":"2026-12-01T14:59:59Z","duration":"1ms","outcome":"success"}`, `trace.jsonl:2: start: goes backwards: 2026-12-01T14:59:59Z is before the previous line's 2026-12-01T15:00:00Z`},
		{"bad duration", `{"start":"2026-12-01T15:00:01Z","duration":"soon","outcome":"success"}`, `trace.jsonl:2: duration: must be a Go duration >= 0 such as 12.5ms, got "soon"`},
		{"negative duration", `{"start":"2026-12-01T15:00:01Z","duration":"-1ms","outcome":"success"}`, `trace.jsonl:2: duration: must be a Go duration >= 0 such as 12.5ms, got "-1ms"`},
		{"unknown outcome", `{"start":"2026-12-01T15:00:01Z","duration":"1ms","outcome":"meh"}`, `trace.jsonl:2: outcome: must be "success" or "failure", got "meh"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sim.NewTraceReader(strings.NewReader(good+"\n"+tc.line+"\n"+good+"\n"), "trace.jsonl")
			_, err := r.Next()
			require.NoError(t, err)
			_, err = r.Next()
			assert.EqualError(t, err, tc.want)
			var te *sim.TraceError
			require.True(t, errors.As(err, &te))
			assert.Equal(t, 2, te.Line)

			// Replay stops at the bad line with the same error.
			_, err = sim.Replay(sim.NewTraceReader(strings.NewReader(good+"\n"+tc.line+"\n"), "trace.jsonl"), []sim.Candidate{{Name: "x"}}, sim.Options{})
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
		{Start: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), Duration: 10 * time.Millisecond, Outcome: record.Success},
		{Start: time.Date(2026, 12, 1, 15, 0, 1, 0, time.UTC), Duration: time.Millisecond, Outcome: record.Failure, Class: "timeout", Key: "k"},
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
		{"bad policy", sim.Candidate{Name: "a", Breaker: &circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: -1}}}, `candidate "a": circuitbreaker: Consecutive.Failures must be >= 0, got -1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sim.Replay(sim.NewTraceReader(strings.NewReader(good), "t"), []sim.Candidate{tc.cand}, sim.Options{})
			assert.EqualError(t, err, tc.want)
		})
	}
}

// A bad line after calls still in flight: Replay lets them end and
// leaves no goroutine behind.
func TestReplay_SM6_ErrorLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	trace := `{"start":"2026-12-01T15:00:00Z","duration":"1h","outcome":"success"}` + "\n{oops\n"
	_, err := sim.Replay(sim.NewTraceReader(strings.NewReader(trace), "t"), []sim.Candidate{{Name: "x", Timeout: time.Minute}}, sim.Options{})
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
