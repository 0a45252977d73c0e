package sim_test

import (
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/sim"
	"github.com/rampart-go/rampart/sim/internal/tracegen"
)

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
