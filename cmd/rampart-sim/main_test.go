package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const outage = "../../sim/testdata/outage.jsonl"

// The command runs on a shipped sample: it prints the comparison and
// writes the chart.
func TestRun_SM9_SampleTableAndChart(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "c.png")
	var out, errs bytes.Buffer
	require.NoError(t, run([]string{"-trace", outage, "-candidates", "testdata/candidates.toml", "-chart", chart}, nil, &out, &errs))
	lines := strings.Split(out.String(), "\n")
	require.Greater(t, len(lines), 5)
	assert.Contains(t, lines[0], "candidate  sent    ok  failed  refused  lost")
	assert.Equal(t, "          no breaker  3000  2087     913        0     0        0        0               0      0       -       0/1       -        -  17.2ms    39ms  63.5ms", lines[1])
	png, err := os.ReadFile(chart)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(png[:4]))
}

func TestRun_SM9_JSON(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"-trace", outage, "-candidates", "testdata/candidates.toml", "-chart", "", "-json"}, nil, &out, &bytes.Buffer{}))
	var v struct {
		Skipped int `json:"skipped_lines"`
		Results []struct {
			Name    string `json:"name"`
			Calls   int    `json:"calls"`
			Refused int    `json:"refused"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &v))
	require.Len(t, v.Results, 4)
	assert.Equal(t, "5 in a row, 30s", v.Results[1].Name)
	assert.Equal(t, 3000, v.Results[1].Calls)
	assert.Equal(t, 899, v.Results[1].Refused)
}

// write writes content to a file in a temporary directory and returns its
// path.
func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// Each bad candidates file is an error naming the file, the line and the
// key.
func TestRun_SM7_BadCandidates(t *testing.T) {
	for _, tc := range []struct {
		name, toml, want string
	}{
		{"unknown key", "[[candidate]]\nname = \"a\"\ncolour = \"red\"\n", `c.toml:3: candidate.0.colour: unknown key "colour" (misspelt?)`},
		{"misspelt nested key", "[[candidate]]\nname = \"a\"\n[[candidate]]\nname = \"b\"\n[candidate.breaker.consecutive]\nfailurs = 3\n", `c.toml:6: candidate.1.breaker.consecutive.failurs: unknown key "failurs" (misspelt?)`},
		{"misspelt table", "[[candidate]]\nname = \"a\"\n[candidate.breker]\ncool_down = \"1s\"\n", `c.toml:3: candidate.0.breker: unknown key "breker" (misspelt?)`},
		{"out of range", "[[candidate]]\nname = \"a\"\n[candidate.breaker]\nmax_probes = 5000\n", `c.toml:4: candidate.0.breaker.max_probes: circuitbreaker: MaxProbes must be in [0, 1024], got 5000`},
		{"policy out of range", "[[candidate]]\nname = \"a\"\n[candidate.breaker.failure_rate]\nratio = 1.5\n", `c.toml:4: candidate.0.breaker.failure_rate.ratio: circuitbreaker: FailureRate.Ratio must be in (0, 1], got 1.5`},
		{"budget out of range", "[[candidate]]\nname = \"a\"\n[candidate.retry.budget]\nwindow = \"2h\"\n", `c.toml:4: candidate.0.retry.budget.window: budget: Window must be 0 (the default, 10s) or between 1s and 1m0s, got 2h0m0s`},
		{"negative timeout", "[[candidate]]\nname = \"a\"\ntimeout = \"-1s\"\n", `c.toml:3: candidate.0.timeout: candidate "a": Timeout must be 0 (none) or positive, got -1s`},
		{"bad duration", "[[candidate]]\nname = \"a\"\ntimeout = \"soon\"\n", `c.toml:3: candidate.0.timeout: must be a duration such as 1.5s or 300ms, got "soon"`},
		{"budget and no budget", "[[candidate]]\nname = \"a\"\n[candidate.retry]\nno_budget = true\n[candidate.retry.budget]\nratio = 0.5\n", `c.toml:4: candidate.0.retry.no_budget: no_budget = true and a [retry.budget] table exclude each other`},
		{"bad jitter", "[[candidate]]\nname = \"a\"\n[candidate.retry]\njitter = \"lots\"\n", `c.toml:4: candidate.0.retry.jitter: must be full, equal, decorrelated or none, got "lots"`},
		{"wrong type", "[[candidate]]\nname = \"a\"\n[candidate.breaker]\nmax_probes = \"two\"\n", `c.toml:4: candidate.0.breaker.max_probes: incompatible types: TOML value has type string; destination has type integer`},
		{"same name", "[[candidate]]\nname = \"a\"\n[[candidate]]\nname = \"a\"\n", `c.toml:3: candidate.1: each candidate needs a name of its own, got "a"`},
		{"no name", "[[candidate]]\ntimeout = \"1s\"\n", `c.toml:1: candidate.0: each candidate needs a name of its own, got ""`},
		{"bad option", "[options]\nburst_min = -1\n[[candidate]]\nname = \"a\"\n", `c.toml:2: options.burst_min: sim: BurstMin must be 0 (the default, 5) or positive, got -1`},
		{"syntax", "[[candidate]\n", `c.toml:2: expected end of table array name delimiter ']', but got '\n' instead`},
		{"none", "", `c.toml: no [[candidate]]`},
		{"misspelt key in an inline table", "[[candidate]]\nname = \"a\"\n[candidate.breaker.failure_rate]\nratio = 0.5\nwindow = {size = 20, sise = 20}\n", `c.toml:5: candidate.0.breaker.failure_rate.window.sise: unknown key "sise" (misspelt?)`},
		{"misspelt dotted key", "[[candidate]]\nname = \"a\"\n[[candidate]]\nname = \"b\"\nbreaker.reset_timeot = \"5s\"\n", `c.toml:5: candidate.1.breaker.reset_timeot: unknown key "reset_timeot" (misspelt?)`},
		{"dotted key out of range", "[[candidate]]\nname = \"a\"\nbreaker.cool_down = \"-5s\"\n", `c.toml:3: candidate.0.breaker.cool_down: circuitbreaker: CoolDown must be >= 0 (or Immediate), got -5s`},
		{"inline table out of range", "[[candidate]]\nname = \"a\"\nbreaker = {cool_down = \"1s\", failure_rate = {window = {size = -2}}}\n", `c.toml:3: candidate.0.breaker.failure_rate.window.size: circuitbreaker: FailureRate.Window.Size must be >= 0, got -2`},
		{"wrong type in the second candidate", "[[candidate]]\nname = \"a\"\n[[candidate]]\nname = \"b\"\n[candidate.breaker]\nmax_probes = \"two\"\n", `c.toml:6: candidate.1.breaker.max_probes: incompatible types: TOML value has type string; destination has type integer`},
		{"wrong type in an inline table", "[[candidate]]\nname = \"a\"\n[candidate.breaker.slow_calls]\nwindow = {size = \"x\"}\n", `c.toml:4: candidate.0.breaker.slow_calls.window.size: incompatible types: TOML value has type string; destination has type integer`},
		{"bad duration, dotted", "[[candidate]]\nname = \"a\"\nretry.budget.window = \"soon\"\n", `c.toml:3: candidate.0.retry.budget.window: must be a duration such as 1.5s or 300ms, got "soon"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := write(t, "c.toml", tc.toml)
			err := run([]string{"-trace", outage, "-candidates", c, "-chart", ""}, nil, &bytes.Buffer{}, &bytes.Buffer{})
			require.Error(t, err)
			assert.Equal(t, tc.want, strings.TrimPrefix(err.Error(), filepath.Dir(c)+"/"))
		})
	}
}

// A bad trace line stops the replay with its file, line and field, unless
// -skip-bad is given: then the count is reported.
func TestRun_SM6_BadTraceLine(t *testing.T) {
	good := `{"start":"2026-12-01T15:00:00Z","duration":"10ms","outcome":"success"}`
	trace := write(t, "t.jsonl", good+"\n"+`{"start":"2026-12-01T15:00:01Z","duration":"10ms","outcome":"sucess"}`+"\n"+good+"\n")
	err := run([]string{"-trace", trace, "-candidates", "testdata/candidates.toml", "-chart", ""}, nil, &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Equal(t, trace+`:2: outcome: must be "success", "failure", "ignored" or "refused", got "sucess"`, err.Error())

	var out bytes.Buffer
	require.NoError(t, run([]string{"-trace", trace, "-candidates", "testdata/candidates.toml", "-chart", "", "-skip-bad"}, nil, &out, &bytes.Buffer{}))
	assert.Contains(t, out.String(), "\n1 bad trace line skipped\n")
}

func TestRun_Usage(t *testing.T) {
	var errs bytes.Buffer
	assert.ErrorIs(t, run([]string{"-trace", outage}, nil, &bytes.Buffer{}, &errs), errUsage)
	assert.Contains(t, errs.String(), "-candidates file")
}

// Lines out of order within the reorder window (a recorder writes a long
// call after shorter calls that started later) replay in order of start;
// with -reorder 0 the first step back is an error.
func TestRun_SM6_OutOfOrderTrace(t *testing.T) {
	trace := write(t, "t.jsonl", `{"start":"2026-12-01T15:00:00.01Z","duration":"1ms","outcome":"failure"}
{"start":"2026-12-01T15:00:00Z","duration":"100ms","outcome":"success"}
{"start":"2026-12-01T15:00:01Z","duration":"10ms","outcome":"success"}
`)
	var out bytes.Buffer
	require.NoError(t, run([]string{"-trace", trace, "-candidates", "testdata/candidates.toml", "-chart", "", "-json"}, nil, &out, &bytes.Buffer{}))
	var v struct {
		Results []struct {
			Calls     int `json:"calls"`
			Succeeded int `json:"succeeded"`
			Span      int `json:"span_ns"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &v))
	assert.Equal(t, 3, v.Results[0].Calls)
	assert.Equal(t, 2, v.Results[0].Succeeded)
	assert.Equal(t, 1010_000_000, v.Results[0].Span)

	err := run([]string{"-trace", trace, "-candidates", "testdata/candidates.toml", "-chart", "", "-reorder", "0"}, nil, &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Equal(t, trace+`:2: start: goes backwards: 2026-12-01T15:00:00Z is before line 1's 2026-12-01T15:00:00.01Z`, err.Error())

	var errs bytes.Buffer
	assert.ErrorIs(t, run([]string{"-trace", trace, "-candidates", "testdata/candidates.toml", "-reorder", "-1s"}, nil, &bytes.Buffer{}, &errs), errUsage)
	assert.Contains(t, errs.String(), "-reorder must be 0 (lines strictly in order) or positive, got -1s\n")
}

// A trace with no calls is an error, saying how many bad lines were
// skipped if any.
func TestRun_SM6_EmptyTrace(t *testing.T) {
	for _, tc := range []struct {
		name, trace, want string
		args              []string
	}{
		{name: "empty", trace: "\n\n", want: ": no calls to replay: the trace is empty"},
		{name: "all skipped", trace: "{oops\n", args: []string{"-skip-bad"}, want: ": no calls to replay (1 bad line skipped)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := write(t, "t.jsonl", tc.trace)
			err := run(append([]string{"-trace", trace, "-candidates", "testdata/candidates.toml", "-chart", ""}, tc.args...), nil, &bytes.Buffer{}, &bytes.Buffer{})
			require.Error(t, err)
			assert.Equal(t, trace+tc.want, err.Error())
		})
	}
}

// -trace - reads the trace from standard input, named so in errors.
func TestRun_SM9_TraceFromStdin(t *testing.T) {
	trace, err := os.ReadFile(outage)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, run([]string{"-trace", "-", "-candidates", "testdata/candidates.toml", "-chart", "", "-json"}, bytes.NewReader(trace), &out, &bytes.Buffer{}))
	var v struct {
		Trace   string `json:"trace"`
		Results []struct {
			Calls int `json:"calls"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &v))
	assert.Equal(t, "standard input", v.Trace)
	assert.Equal(t, 3000, v.Results[0].Calls)

	err = run([]string{"-trace", "-", "-candidates", "testdata/candidates.toml", "-chart", ""}, strings.NewReader(`{"start":"yesterday"}`+"\n"), &bytes.Buffer{}, &bytes.Buffer{})
	assert.EqualError(t, err, `standard input:1: start: must be an RFC 3339 time such as 2026-12-01T15:00:00.5Z, got "yesterday"`)
}

// A -chart path that cannot be written is reported before the replay
// reads a line (the trace here would block forever); a failed replay
// leaves no chart file behind.
func TestRun_SM9_BadChartFirst(t *testing.T) {
	blocked, _ := io.Pipe() // never written: reading it blocks
	dir := t.TempDir()
	bad := filepath.Join(dir, "no-such-dir", "c.png")
	err := run([]string{"-trace", "-", "-candidates", "testdata/candidates.toml", "-chart", bad}, blocked, &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Equal(t, "-chart: open "+bad+": no such file or directory", err.Error())

	chart := filepath.Join(dir, "c.png")
	err = run([]string{"-trace", "-", "-candidates", "testdata/candidates.toml", "-chart", chart}, strings.NewReader("{oops\n"), &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	assert.NoFileExists(t, chart)
}

// A line whose start is bad is reported as a bad start, whatever else it
// lacks.
func TestRun_SM6_BadStartIsABadStart(t *testing.T) {
	trace := write(t, "t.jsonl", `{"start":"2026-12-01 15:00:00"}`+"\n")
	err := run([]string{"-trace", trace, "-candidates", "testdata/candidates.toml", "-chart", ""}, nil, &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Equal(t, trace+`:1: start: must be an RFC 3339 time such as 2026-12-01T15:00:00.5Z, got "2026-12-01 15:00:00"`, err.Error())
}
