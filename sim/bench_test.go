package sim_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/sim"
	"github.com/rampart-go/rampart/sim/internal/tracegen"
)

// fullCandidate is a candidate with every layer: a breaker, retries with
// a budget, and a timeout.
var fullCandidate = sim.Candidate{
	Name:    "full",
	Breaker: &circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 5}, CoolDown: 5 * time.Second},
	Retry:   &sim.Retry{MaxAttempts: 3, Budget: &budget.Config{}},
	Timeout: time.Second,
}

// BenchmarkReplayMillion replays one million recorded calls (the flapping
// scenario, made as it is read) through one candidate with a breaker,
// retries with a budget, and a timeout. It reports the heap in use at the
// end; TestReplay_SM10_HeapBounded asserts that the heap does not grow
// with the trace.
func BenchmarkReplayMillion(b *testing.B) {
	s, err := tracegen.Find("flapping")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := sim.Replay(sim.NewTraceReader(tracegen.Reader(s, 1_000_000), "flapping"), []sim.Candidate{fullCandidate}, sim.Config{})
		if err != nil {
			b.Fatal(err)
		}
		if res[0].Calls != 1_000_000 {
			b.Fatalf("replayed %d calls", res[0].Calls)
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "MiB-heap-in-use")
}
