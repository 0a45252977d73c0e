package sim_test

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/sim"
	"github.com/rampart-go/rampart/sim/internal/tracegen"
)

var t0 = time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)

// tenCalls is the hand-made trace: a call every second, each 100ms except
// calls 5 and 6 (200ms), outcomes S F F F S S S F S S.
func tenCalls() string {
	var b strings.Builder
	for i, o := range "SFFFSSSFSS" {
		out, d := "success", "100ms"
		if o == 'F' {
			out = "failure"
		}
		if i == 5 || i == 6 {
			d = "200ms"
		}
		fmt.Fprintf(&b, `{"start":%q,"duration":%q,"outcome":%q}`+"\n", t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), d, out)
	}
	return b.String()
}

func replay(t *testing.T, trace string, opt sim.Config, cands ...sim.Candidate) []sim.Result {
	t.Helper()
	res, err := sim.Replay(sim.NewTraceReader(strings.NewReader(trace), "trace.jsonl"), cands, opt)
	require.NoError(t, err)
	return res
}

// onThirdFailure is a candidate whose breaker's IsFailure, user code
// that runs on the replay's goroutines, calls f when asked about the
// third failure.
func onThirdFailure(f func()) sim.Candidate {
	failures := 0
	return sim.Candidate{Name: "judge", Breaker: &circuitbreaker.Config{
		Policy: circuitbreaker.Consecutive{Failures: 10},
		IsFailure: func(error) bool {
			if failures++; failures == 3 {
				f()
			}
			return true
		},
	}}
}

// A candidate whose user code panics during a replay (here its breaker's
// IsFailure, on the third failure) does not end the program from the
// replay's goroutine: the calls in flight end, and Replay panics on its
// caller's goroutine with a *rampart.PanicError holding the value and the
// stack where it happened; before, the program ended (PN1).
func TestReplay_PN1_PanicInTheStackReachesTheCaller(t *testing.T) {
	defer goleak.VerifyNone(t)
	cand := onThirdFailure(func() { panic("judge exploded") })

	var recovered any
	func() {
		defer func() { recovered = recover() }()
		_, _ = sim.Replay(sim.NewTraceReader(strings.NewReader(tenCalls()), "trace.jsonl"), []sim.Candidate{cand}, sim.Config{})
	}()

	pe, ok := recovered.(*rampart.PanicError)
	require.True(t, ok, "panic value %#v", recovered)
	assert.Equal(t, "judge exploded", pe.Value)
	assert.Contains(t, string(pe.Stack), "TestReplay_PN1_PanicInTheStackReachesTheCaller")
}

// A call under replay that exits its goroutine (t.FailNow in a test
// double) ends the replay and exits Replay's caller's goroutine too, as
// it would have had the call run there; before, Replay waited for the
// call forever.
func TestReplay_PN1_GoexitInTheStackEndsTheCallersGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	cand := onThirdFailure(runtime.Goexit)

	returned, recovered := false, any(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { recovered = recover() }()
		_, _ = sim.Replay(sim.NewTraceReader(strings.NewReader(tenCalls()), "trace.jsonl"), []sim.Candidate{cand}, sim.Config{})
		returned = true
	}()
	<-done

	assert.False(t, returned)
	assert.Nil(t, recovered)
}

// Each built-in policy's replay of the ten-call trace, worked out by hand
// (times in seconds from the first call; a call's outcome counts when it
// returns, at its start plus its duration).
func TestReplay_SM2_TenCallsByHand(t *testing.T) {
	cool := 2500 * time.Millisecond
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		cand sim.Candidate
		want sim.Result
	}{
		{
			// Failures at 1.1 and 2.1 trip it at 2.1; Open until 4.6: call 3
			// (a failure) and call 4 (a success: lost) are refused; call 5
			// is the probe and closes it at 5.2. The burst 1-3 starts at 1.0
			// and ends at 4.0: detected after 1.1s, recovered 1.2s after.
			name: "consecutive",
			cand: sim.Candidate{Breaker: &circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: cool}},
			want: sim.Result{Calls: 10, Sent: 8, Succeeded: 5, Failed: 3, Refused: 2, LostGoodput: 1, Trips: 1, TimeOpen: cool,
				Bursts: 1, Detected: 1, Recovered: 1, DetectMean: 1100 * ms, DetectMax: 1100 * ms, RecoverMean: 1200 * ms, RecoverMax: 1200 * ms},
		},
		{
			// The window of 4 holds S F F F at 3.1: 3/4 >= 0.5 trips it. Open
			// until 5.6: calls 4 and 5 (successes, both lost) are refused;
			// call 6 is the probe and closes it at 6.2. Calls 7-9 are 3, fewer
			// than the window's 4. Detected 2.1s after 1.0, recovered 2.2s
			// after 4.0.
			name: "failure rate",
			cand: sim.Candidate{Breaker: &circuitbreaker.Config{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 4}, Ratio: 0.5}, CoolDown: cool}},
			want: sim.Result{Calls: 10, Sent: 8, Succeeded: 4, Failed: 4, Refused: 2, LostGoodput: 2, Trips: 1, TimeOpen: cool,
				Bursts: 1, Detected: 1, Recovered: 1, DetectMean: 2100 * ms, DetectMax: 2100 * ms, RecoverMean: 2200 * ms, RecoverMax: 2200 * ms},
		},
		{
			// Failures never trip it; calls 5 and 6 are slow (200ms >
			// 150ms), filling the window of 2 at 6.2. Open until 8.7: call 7
			// (a failure) and call 8 (a success: lost) are refused; call 9 is
			// a fast probe and closes it. The burst 1-3 goes unnoticed.
			name: "slow calls",
			cand: sim.Candidate{Breaker: &circuitbreaker.Config{Policy: circuitbreaker.SlowCalls{Threshold: 150 * ms, Window: circuitbreaker.Window{Size: 2}}, CoolDown: cool}},
			want: sim.Result{Calls: 10, Sent: 8, Succeeded: 5, Failed: 3, Refused: 2, LostGoodput: 1, Trips: 1, TimeOpen: cool,
				Bursts: 1, Detected: 0},
		},
		{
			// Trips as "consecutive" at 2.1, Open until 4.6; calls 3 and 4
			// refused; calls 5 and 6 are the two probes judged, both succeed,
			// and it closes when the second returns, at 6.2: recovered 2.2s
			// after 4.0.
			name: "success rate",
			cand: sim.Candidate{Breaker: &circuitbreaker.Config{Policy: circuitbreaker.SuccessRate{Trip: circuitbreaker.Consecutive{Failures: 2}, Probes: 2, Ratio: 1}, CoolDown: cool}},
			want: sim.Result{Calls: 10, Sent: 8, Succeeded: 5, Failed: 3, Refused: 2, LostGoodput: 1, Trips: 1, TimeOpen: cool,
				Bursts: 1, Detected: 1, Recovered: 1, DetectMean: 1100 * ms, DetectMax: 1100 * ms, RecoverMean: 2200 * ms, RecoverMax: 2200 * ms},
		},
		{
			// No breaker; a 150ms timeout cuts calls 5 and 6; each failure
			// (1, 2, 3, 5, 6, 7) is retried once 300ms later and meets the
			// dependency as its own recording found it, so fails again.
			// Calls 5-7 fail as this candidate sees them: a second burst.
			name: "timeout and retries",
			cand: sim.Candidate{Timeout: 150 * ms, Retry: &sim.Retry{MaxAttempts: 2, Backoff: retry.Exponential{Base: 300 * ms, Jitter: retry.NoJitter}}},
			want: sim.Result{Calls: 10, Sent: 16, Succeeded: 4, Failed: 6, RetriesSent: 6, Bursts: 2},
		},
		{
			// As above with a budget of half a retry per call and no floor:
			// calls 1, 3, 5 and 7 find a whole retry (two deposits since the
			// last withdrawal), calls 2 and 6 find half of one.
			name: "timeout, retries and budget",
			cand: sim.Candidate{Timeout: 150 * ms, Retry: &sim.Retry{MaxAttempts: 2, Backoff: retry.Exponential{Base: 300 * ms, Jitter: retry.NoJitter},
				Budget: &budget.Config{MinPerSecond: budget.NoFloor, Ratio: 0.5}}},
			want: sim.Result{Calls: 10, Sent: 14, Succeeded: 4, Failed: 6, RetriesSent: 4, RetriesRefusedByBudget: 2, Bursts: 2},
		},
		{
			// Calls 5 and 6 take exactly the 200ms timeout, which wins the
			// tie (its timer is set before the attempt's): they fail, and
			// with call 7 make a second burst.
			name: "timeout equal to the duration",
			cand: sim.Candidate{Timeout: 200 * ms},
			want: sim.Result{Calls: 10, Sent: 10, Succeeded: 4, Failed: 6, Bursts: 2},
		},
		{
			// A time window of four 1s buckets, aligned on the first call:
			// at 2.1 it holds S(0.1) F(1.1) F(2.1), 3 calls (MinCalls), 2/3
			// >= 0.5: trips at 2.1, and then as "consecutive". Closed again
			// at 5.2 (emptied), it holds S S F S S by the end: 1 of 5.
			name: "failure rate, time window",
			cand: sim.Candidate{Breaker: &circuitbreaker.Config{Policy: circuitbreaker.FailureRate{
				Window: circuitbreaker.Window{Period: 4 * time.Second, Buckets: 4, MinCalls: 3}, Ratio: 0.5}, CoolDown: cool}},
			want: sim.Result{Calls: 10, Sent: 8, Succeeded: 5, Failed: 3, Refused: 2, LostGoodput: 1, Trips: 1, TimeOpen: cool,
				Bursts: 1, Detected: 1, Recovered: 1, DetectMean: 1100 * ms, DetectMax: 1100 * ms, RecoverMean: 1200 * ms, RecoverMax: 1200 * ms},
		},
		{
			// Two 1s buckets hold at most two of these calls (one a
			// second): at 2.1 the success of 0.1 has left the window, which
			// holds F F, fewer than MinCalls 3; it never trips.
			name: "failure rate, short time window",
			cand: sim.Candidate{Breaker: &circuitbreaker.Config{Policy: circuitbreaker.FailureRate{
				Window: circuitbreaker.Window{Period: 2 * time.Second, Buckets: 2, MinCalls: 3}, Ratio: 0.5}, CoolDown: cool}},
			want: sim.Result{Calls: 10, Sent: 10, Succeeded: 6, Failed: 4, Bursts: 1},
		},
		{
			// Three 1s buckets: at 5.2 they hold F(3.1) S(4.1) and the slow
			// S(5.2), 1 slow of 3; at 6.2 S(4.1) and the slow 5.2 and 6.2,
			// 2/3 >= 0.5: trips. Open until 8.7: call 7 (a failure) and
			// call 8 (a success: lost) are refused; call 9 is a fast probe
			// and closes it at 9.1. The burst 1-3 goes unnoticed.
			name: "slow calls, time window",
			cand: sim.Candidate{Breaker: &circuitbreaker.Config{Policy: circuitbreaker.SlowCalls{Threshold: 150 * ms, Ratio: 0.5,
				Window: circuitbreaker.Window{Period: 3 * time.Second, Buckets: 3, MinCalls: 3}}, CoolDown: cool}},
			want: sim.Result{Calls: 10, Sent: 8, Succeeded: 5, Failed: 3, Refused: 2, LostGoodput: 1, Trips: 1, TimeOpen: cool,
				Bursts: 1, Detected: 0},
		},
		{
			// Three failures in a row trip it at 3.1 (the slow-call window
			// of 2 sees no slow call); Open until 5.6: calls 4 and 5
			// (successes, lost) are refused. Call 6, the probe, succeeds
			// but slowly: the consecutive rule would close, the slow-call
			// rule re-opens, and Any re-opens at 6.2 (a second trip). Open
			// until 8.7: call 7 (a failure) and 8 (a success, lost) are
			// refused; call 9, a fast probe, closes it at 9.1. Detected 2.1s
			// after 1.0; recovered 5.1s after 4.0.
			name: "any",
			cand: sim.Candidate{Breaker: &circuitbreaker.Config{Policy: circuitbreaker.Any(
				circuitbreaker.Consecutive{Failures: 3},
				circuitbreaker.SlowCalls{Threshold: 150 * ms, Window: circuitbreaker.Window{Size: 2}}), CoolDown: cool}},
			want: sim.Result{Calls: 10, Sent: 6, Succeeded: 3, Failed: 3, Refused: 4, LostGoodput: 3, Trips: 2, TimeOpen: 2 * cool,
				Bursts: 1, Detected: 1, Recovered: 1, DetectMean: 2100 * ms, DetectMax: 2100 * ms, RecoverMean: 5100 * ms, RecoverMax: 5100 * ms},
		},
		{
			// Trips on the fourth failure of the Closed period, at 7.1, with
			// no window; Open to the end: calls 8 and 9 (successes, lost) are
			// refused. The last call returns, refused, at 9.0: Open 1.9s.
			name: "trip func",
			cand: sim.Candidate{Breaker: &circuitbreaker.Config{Policy: circuitbreaker.TripFunc(func(c circuitbreaker.Counts) bool {
				return c.Failures >= 4
			}), CoolDown: cool}},
			want: sim.Result{Calls: 10, Sent: 8, Succeeded: 4, Failed: 4, Refused: 2, LostGoodput: 2, Trips: 1, TimeOpen: 1900 * ms,
				Bursts: 1, Detected: 0, Span: 9 * time.Second},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cand.Name = tc.name
			res := replay(t, tenCalls(), sim.Config{BurstMin: 2}, tc.cand)
			require.Len(t, res, 1)
			got := res[0]
			assert.Len(t, got.Series, 10)
			assert.Equal(t, time.Second, got.Resolution)
			got.Series, got.Resolution = nil, 0
			// Latencies have tests of their own (latency_test.go).
			assert.True(t, got.LatencyMeasured)
			got.LatencyP50, got.LatencyP99, got.LatencyMax, got.LatencyMeasured = 0, 0, 0, false
			tc.want.Name = tc.name
			if tc.want.Span == 0 {
				tc.want.Span = 9100 * ms
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// The series spreads the breaker's states over the points it covers:
// "consecutive" is Open from 2.1 to 4.6 and HalfOpen from 4.6 to 5.2.
func TestReplay_SM5_SeriesOfStates(t *testing.T) {
	res := replay(t, tenCalls(), sim.Config{BurstMin: 2}, sim.Candidate{Name: "c",
		Breaker: &circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: 2500 * time.Millisecond}})
	ms := time.Millisecond
	want := []sim.Point{
		{Succeeded: 1, Sent: 1},
		{Failed: 1, Sent: 1},
		{Failed: 1, Sent: 1, Open: 900 * ms},
		{Refused: 1, Open: time.Second},
		{Refused: 1, Open: 600 * ms, HalfOpen: 400 * ms},
		{Succeeded: 1, Sent: 1, HalfOpen: 200 * ms},
		{Succeeded: 1, Sent: 1},
		{Failed: 1, Sent: 1},
		{Succeeded: 1, Sent: 1},
		{Succeeded: 1, Sent: 1},
	}
	assert.Equal(t, want, res[0].Series)

	// With at most 4 points, the ten seconds fold into 4s points.
	res = replay(t, tenCalls(), sim.Config{BurstMin: 2, MaxPoints: 4}, sim.Candidate{Name: "c",
		Breaker: &circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: 2500 * time.Millisecond}})
	assert.Equal(t, 4*time.Second, res[0].Resolution)
	assert.Equal(t, []sim.Point{
		{Succeeded: 1, Failed: 2, Refused: 1, Sent: 3, Open: 1900 * ms},
		{Succeeded: 2, Failed: 1, Refused: 1, Sent: 3, Open: 600 * ms, HalfOpen: 600 * ms},
		{Succeeded: 2, Sent: 2},
	}, res[0].Series)
}

// Candidates are replayed independently from one reading of the trace.
func TestReplay_SM1_CandidatesInOnePass(t *testing.T) {
	res := replay(t, tenCalls(), sim.Config{}, sim.Candidate{Name: "none"},
		sim.Candidate{Name: "cb", Breaker: &circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: 2500 * time.Millisecond}})
	require.Len(t, res, 2)
	assert.Equal(t, "none", res[0].Name)
	assert.Equal(t, 10, res[0].Sent)
	assert.Equal(t, 6, res[0].Succeeded)
	assert.Equal(t, 8, res[1].Sent)
}

// The same trace, candidates and options give the same results, jitter
// included; another seed gives other retry timings.
func TestReplay_SM3_Deterministic(t *testing.T) {
	cand := sim.Candidate{Name: "full", Timeout: 50 * time.Millisecond,
		Breaker: &circuitbreaker.Config{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 20}}, CoolDown: 5 * time.Second},
		Retry:   &sim.Retry{MaxAttempts: 3, Budget: &budget.Config{}}}
	once := func(seed uint64) []sim.Result {
		f, err := os.Open("testdata/flapping.jsonl")
		require.NoError(t, err)
		defer f.Close()
		res, err := sim.Replay(sim.NewTraceReader(f, "flapping.jsonl"), []sim.Candidate{cand}, sim.Config{Seed: seed})
		require.NoError(t, err)
		return res
	}
	a := once(1)
	assert.Equal(t, a, once(1))
	assert.Equal(t, 3000, a[0].Calls)
	assert.NotZero(t, a[0].RetriesSent)
	assert.NotEqual(t, a, once(2))
}

// Without a Budget, retries draw on the retry layer's default budget (20%
// of recent calls plus 10 a second): 300 failures in 300ms are not all
// retried. NoBudget retries each of them.
func TestReplay_SM2_DefaultBudgetAndNoBudget(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		b.WriteString(traceLine(time.Duration(i)*time.Millisecond, "failure"))
	}
	retries := sim.Retry{MaxAttempts: 2, Backoff: retry.Exponential{Base: time.Millisecond, Jitter: retry.NoJitter}}
	none := retries
	none.NoBudget = true
	res := replay(t, b.String(), sim.Config{}, sim.Candidate{Name: "default", Retry: &retries}, sim.Candidate{Name: "none", Retry: &none})
	assert.NotZero(t, res[0].RetriesRefusedByBudget)
	assert.Equal(t, 300, res[0].RetriesSent+res[0].RetriesRefusedByBudget)
	assert.Equal(t, 300, res[1].RetriesSent)
	assert.Zero(t, res[1].RetriesRefusedByBudget)
}

// Latency is what callers felt, from the recorded start: a retried call
// of the ten-call trace takes its attempt, the backoff and the retry
// (100ms + 300ms + 100ms; 150ms + 300ms + 150ms when timed out).
func TestReplay_SM12_Latency(t *testing.T) {
	ms := time.Millisecond
	res := replay(t, tenCalls(), sim.Config{}, sim.Candidate{Name: "retries", Timeout: 150 * ms,
		Retry: &sim.Retry{MaxAttempts: 2, Backoff: retry.Exponential{Base: 300 * ms, Jitter: retry.NoJitter}}})
	// 100ms ×4, 500ms ×4, 600ms ×2: the 5th and the 10th smallest.
	assert.Equal(t, 500*ms, res[0].LatencyP50)
	assert.Equal(t, 600*ms, res[0].LatencyP99)
	assert.Equal(t, 600*ms, res[0].LatencyMax)
}

// liveHeap is a trace being read that, every 256 KiB (about 3000 lines),
// collects garbage and notes the live heap (HeapAlloc just after a GC):
// peak is the largest seen during the replay.
type liveHeap struct {
	r    io.Reader
	n    int // bytes read since the last sample
	peak uint64
}

func (h *liveHeap) Read(p []byte) (int, error) {
	if h.n >= 256<<10 {
		h.sample()
		h.n = 0
	}
	n, err := h.r.Read(p)
	h.n += n
	return n, err
}

func (h *liveHeap) sample() {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.peak = max(h.peak, m.HeapAlloc)
}

// heapSlack is how much more live heap the long replay may reach than the
// short one: the series' points (at most 1000), the reorder window's heap
// and the scheduler's slices grown once to a larger size, and noise (both
// peaks were 0.38 MiB when measured). A replay that kept as little as 8
// bytes per call would exceed it over the extra calls (90,000 of them
// under the race detector).
const heapSlack = 512 << 10

// The heap of a replay does not grow with the trace: replaying ten times
// as many calls (the flapping scenario, made as it is read, through a
// breaker, retries with a budget and a timeout) reaches the same peak of
// live heap, within heapSlack.
func TestReplay_SM10_HeapBounded(t *testing.T) {
	short, long := 100_000, 1_000_000
	if raceEnabled || testing.Short() {
		short, long = 10_000, 100_000
	}
	s, err := tracegen.Find("flapping")
	require.NoError(t, err)
	peak := func(n int) uint64 {
		h := &liveHeap{r: tracegen.Reader(s, n)}
		res, err := sim.Replay(sim.NewTraceReader(h, "flapping"), []sim.Candidate{fullCandidate}, sim.Config{})
		require.NoError(t, err)
		require.Equal(t, n, res[0].Calls)
		h.sample() // with the results still live
		runtime.KeepAlive(res)
		return h.peak
	}
	p1, p10 := peak(short), peak(long)
	t.Logf("peak live heap: %d calls %.2f MiB, %d calls %.2f MiB", short, float64(p1)/(1<<20), long, float64(p10)/(1<<20))
	assert.LessOrEqual(t, p10, p1+heapSlack, "the live heap grew with the trace")
}

// unknownTrace is a trace with what a trace cannot know: a recorded retry
// (attempt 2), calls the live breaker refused, and an ignored call.
func unknownTrace() string {
	var b strings.Builder
	for _, l := range []struct {
		at       time.Duration
		d, o, ex string
	}{
		{0, "10ms", "success", ``},
		{time.Second, "10ms", "failure", ``},
		{1500 * time.Millisecond, "20ms", "failure", `,"attempt":2`}, // the dependency at 1.5s
		{2 * time.Second, "0s", "refused", `,"class":"open"`},
		{3 * time.Second, "0s", "refused", `,"class":"open"`},
		{4 * time.Second, "10ms", "success", ``},
		{5 * time.Second, "0s", "refused", `,"class":"open"`},
		{6 * time.Second, "5ms", "ignored", ``},
	} {
		fmt.Fprintf(&b, `{"start":%q,"duration":%q,"outcome":%q%s}`+"\n", t0.Add(l.at).Format(time.RFC3339Nano), l.d, l.o, l.ex)
	}
	return b.String()
}

// A recorded retry is not a caller's request, but the dependency as it was;
// a call the live breaker refused takes the outcome and duration of the
// latest known entry and is counted as Unknown when sent; an ignored call
// is counted neither way by the breaker nor as a failure.
func TestReplay_SM11_UnknownOutcomes(t *testing.T) {
	ms := time.Millisecond
	res := replay(t, unknownTrace(), sim.Config{BurstMin: 2},
		sim.Candidate{Name: "none"},
		sim.Candidate{Name: "2 in a row", Breaker: &circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: 10 * time.Second}})
	for i := range res {
		res[i].Series, res[i].Resolution = nil, 0
	}
	// Calls 2 and 3 (refused live) meet the recorded retry of 1.5s: a
	// 20ms failure; call 5 the success of 4s.
	assert.Equal(t, sim.Result{Name: "none", Calls: 7, Sent: 7, Succeeded: 3, Failed: 3, Ignored: 1, Unknown: 3,
		LatencyP50: 10 * ms, LatencyP99: 20 * ms, LatencyMax: 20 * ms, LatencyMeasured: true, Bursts: 1, Span: 6005 * ms}, res[0])
	// Trips on call 2's guessed failure at 2.02s; refuses 3 (not lost:
	// unknown), 4 (lost), 5 (unknown) and 6. The burst 1-3 was detected
	// 1.02s after its start.
	assert.Equal(t, sim.Result{Name: "2 in a row", Calls: 7, Sent: 3, Succeeded: 1, Failed: 2, Refused: 4, LostGoodput: 1, Unknown: 1,
		LatencyP50: 0, LatencyP99: 20 * ms, LatencyMax: 20 * ms, LatencyMeasured: true, Trips: 1, TimeOpen: 3980 * ms,
		Bursts: 1, Detected: 1, DetectMean: 1020 * ms, DetectMax: 1020 * ms, Span: 6 * time.Second}, res[1])
}

// A refused call with no known outcome before it fails at once.
func TestReplay_SM11_UnknownFirst(t *testing.T) {
	trace := fmt.Sprintf(`{"start":%q,"duration":"0s","outcome":"refused"}`+"\n", t0.Format(time.RFC3339Nano))
	res := replay(t, trace, sim.Config{}, sim.Candidate{Name: "none"})
	assert.Equal(t, 1, res[0].Failed)
	assert.Equal(t, 1, res[0].Unknown)
	assert.Equal(t, time.Duration(0), res[0].LatencyMax)
	assert.True(t, res[0].LatencyMeasured, "a latency of 0 is measured")
}
