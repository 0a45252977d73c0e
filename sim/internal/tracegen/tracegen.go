// Package tracegen makes the sample traces of package sim: synthetic
// recordings of a dependency that fails in four ways (a hard outage, a
// flapping dependency, a slow degradation, a burst of slow calls). Each
// scenario is deterministic: the same name and length give the same
// trace, byte for byte. The command gentraces writes them under
// sim/testdata (go generate in package sim).
package tracegen

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rampart-go/rampart/record"
)

// Start is the wall time of every trace's first call.
var Start = time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)

// Scenario shapes a trace: Call returns the outcome of a call starting at
// at (since Start), drawing any randomness from r.
type Scenario struct {
	// Name is the file name, without .jsonl.
	Name string
	// Doc says what the trace shows.
	Doc string
	// Call gives the duration, outcome and error class of a call at at.
	Call func(at time.Duration, r *rand.Rand) (time.Duration, record.Outcome, string)
}

// healthy is a call of a healthy dependency: about 20ms, one failure in a
// hundred.
func healthy(r *rand.Rand) (time.Duration, record.Outcome, string) {
	d := latency(r, 20*time.Millisecond)
	if r.Float64() < 0.01 {
		return d, record.Failure, "error"
	}
	return d, record.Success, ""
}

// latency draws a log-normal latency around median, rounded to the
// microsecond.
func latency(r *rand.Rand, median time.Duration) time.Duration {
	return time.Duration(float64(median) * math.Exp(0.3*r.NormFloat64())).Round(time.Microsecond)
}

// Scenarios are the four sample traces, each 5 minutes at 10 calls a
// second.
var Scenarios = []Scenario{
	{
		Name: "outage",
		Doc:  "a hard outage: healthy, then from 60s to 150s every call is refused at once (2ms), then healthy again",
		Call: func(at time.Duration, r *rand.Rand) (time.Duration, record.Outcome, string) {
			if at >= 60*time.Second && at < 150*time.Second {
				return latency(r, 2*time.Millisecond), record.Failure, "refused"
			}
			return healthy(r)
		},
	},
	{
		Name: "flapping",
		Doc:  "a flapping dependency: every 30s, 20s healthy then 10s in which 90% of calls fail",
		Call: func(at time.Duration, r *rand.Rand) (time.Duration, record.Outcome, string) {
			if at%(30*time.Second) >= 20*time.Second && r.Float64() < 0.9 {
				return latency(r, 5*time.Millisecond), record.Failure, "error"
			}
			return healthy(r)
		},
	},
	{
		Name: "degradation",
		Doc:  "a slow degradation: from 30s to 210s the failure ratio climbs from 1% to 60% and latency from 20ms to 200ms, then it recovers at once",
		Call: func(at time.Duration, r *rand.Rand) (time.Duration, record.Outcome, string) {
			if at < 30*time.Second || at >= 210*time.Second {
				return healthy(r)
			}
			f := float64(at-30*time.Second) / float64(180*time.Second)
			d := latency(r, 20*time.Millisecond+time.Duration(f*float64(180*time.Millisecond)))
			if r.Float64() < 0.01+0.59*f {
				return d, record.Failure, "error"
			}
			return d, record.Success, ""
		},
	},
	{
		Name: "slowburst",
		Doc:  "a burst of slow calls: from 120s to 150s calls take about 3s and a third of them time out at 5s",
		Call: func(at time.Duration, r *rand.Rand) (time.Duration, record.Outcome, string) {
			if at >= 120*time.Second && at < 150*time.Second {
				if r.Float64() < 1.0/3 {
					return 5 * time.Second, record.Failure, "timeout"
				}
				return latency(r, 3*time.Second), record.Success, ""
			}
			return healthy(r)
		},
	},
}

// Find returns the scenario called name.
func Find(name string) (Scenario, error) {
	i := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == name })
	if i < 0 {
		return Scenario{}, fmt.Errorf("tracegen: no scenario %q", name)
	}
	return Scenarios[i], nil
}

// Reader returns the trace of n calls of s, 10 a second (every 100ms, with
// up to 50ms of jitter), as JSON Lines, made as it is read: memory does
// not grow with n.
func Reader(s Scenario, n int) io.Reader {
	return &reader{s: s, n: n, r: rand.New(rand.NewPCG(1, 2))}
}

type reader struct {
	s   Scenario
	n   int
	i   int
	r   *rand.Rand
	buf []byte
}

func (g *reader) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		if g.i == g.n {
			return 0, io.EOF
		}
		at := time.Duration(g.i)*100*time.Millisecond + time.Duration(g.r.Int64N(int64(50*time.Millisecond))).Round(time.Microsecond)
		g.i++
		d, o, class := g.s.Call(at, g.r)
		e := record.Entry{Start: Start.Add(at), Duration: d, Outcome: o, Class: class}
		g.buf = e.AppendJSON(g.buf[:0])
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}
