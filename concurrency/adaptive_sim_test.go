package concurrency_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/wrap"
)

// simBackend is a dependency with capacity calls' worth of workers: a call
// that starts with n calls in flight, itself included, takes unloaded
// while n <= capacity and unloaded × n/capacity above it, as if the
// workers shared their time among the calls in flight; or, when fixed is
// set, fixed whatever the load. The limiter is never told capacity.
type simBackend struct {
	capacity atomic.Int64
	unloaded atomic.Int64 // time.Duration
	fixed    atomic.Int64 // time.Duration; 0 means none
	inFlight atomic.Int64
}

func (b *simBackend) Call(ctx context.Context, req int) (int, error) {
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	d := time.Duration(b.unloaded.Load())
	if c := b.capacity.Load(); n > c {
		d = d * time.Duration(n) / time.Duration(c)
	}
	if f := time.Duration(b.fixed.Load()); f > 0 {
		d = f
	}
	time.Sleep(d)
	return req, nil
}

// simPhase is a stretch of a simulation with a fixed backend.
type simPhase struct {
	length   time.Duration
	capacity int64
	unloaded time.Duration
	fixed    time.Duration // every call takes this long whatever the load, if set
}

// simResult is what a simulation saw in one phase.
type simResult struct {
	// settled is how long after the phase began the limit entered
	// [lo, hi] for good (until the phase ended); -1 if it never did.
	settled time.Duration
	// limits are the limits sampled every 10ms after settling.
	minLimit, maxLimit int
	served, refused    int
	p99                time.Duration // of the served calls
	baseline           time.Duration // at the end of the phase
}

const simTick = 10 * time.Millisecond

// simulate runs clients callers in a closed loop against a simBackend
// behind lim in Refuse mode, through the phases, and reports each phase.
// A refused caller waits the refusal's RetryAfter (at least 1ms) before it
// calls again, as a retry layer honouring the hint would. lo and hi per
// phase are the band that counts as settled.
func simulate(t *testing.T, lim *concurrency.AdaptiveLimiter, clients int, phases []simPhase, band func(simPhase) (lo, hi int)) []simResult {
	t.Helper()
	be := &simBackend{}
	be.capacity.Store(phases[0].capacity)
	be.unloaded.Store(int64(phases[0].unloaded))
	svc, err := wrap.Service[int, int](be, concurrency.NewLayer, concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	require.NoError(t, err)

	var (
		mu      sync.Mutex
		phase   int
		latency = make([][]time.Duration, len(phases))
		refused = make([]int, len(phases))
	)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() { simClient(ctx, svc, &mu, &phase, latency, refused) })
	}

	results := make([]simResult, len(phases))
	for i, ph := range phases {
		mu.Lock()
		phase = i
		mu.Unlock()
		be.capacity.Store(ph.capacity)
		be.unloaded.Store(int64(ph.unloaded))
		be.fixed.Store(int64(ph.fixed))
		lo, hi := band(ph)
		r := simResult{settled: -1, minLimit: 1 << 30}
		for at := time.Duration(0); at < ph.length; at += simTick {
			time.Sleep(simTick)
			n := lim.Limit()
			switch {
			case n < lo || n > hi:
				r.settled = -1
			case r.settled < 0:
				r.settled = at + simTick
				r.minLimit, r.maxLimit = n, n
			default:
				r.minLimit, r.maxLimit = min(r.minLimit, n), max(r.maxLimit, n)
			}
		}
		r.baseline = lim.Baseline()
		results[i] = r
	}
	stop()
	wg.Wait()
	for i := range results {
		slices.Sort(latency[i])
		results[i].served = len(latency[i])
		results[i].refused = refused[i]
		if n := len(latency[i]); n > 0 {
			results[i].p99 = latency[i][(n*99+99)/100-1]
		}
	}
	return results
}

func simClient(ctx context.Context, svc rampart.Service[int, int], mu *sync.Mutex, phase *int, latency [][]time.Duration, refused []int) {
	for ctx.Err() == nil {
		start := time.Now()
		_, err := svc.Call(ctx, 1)
		took := time.Since(start)
		mu.Lock()
		i := *phase
		var lim *concurrency.LimitedError
		switch {
		case err == nil:
			latency[i] = append(latency[i], took)
		case errors.As(err, &lim):
			refused[i]++
		}
		mu.Unlock()
		if err != nil {
			var delay time.Duration
			if lim != nil {
				delay = lim.RetryAfter()
			}
			time.Sleep(max(delay, time.Millisecond))
		}
	}
}

// simConfig is the limiter of the simulations: windows of five unloaded
// latencies.
var simConfig = concurrency.AdaptiveConfig{MinLimit: 1, MaxLimit: 1000, InitialLimit: 20, Window: 50 * time.Millisecond}

// within20 is the band ±20% around the phase's capacity.
func within20(ph simPhase) (lo, hi int) {
	return int(float64(ph.capacity) * 0.8), int(float64(ph.capacity) * 1.2)
}

// The limit finds a capacity it is not told, under four times as many
// callers as the capacity, and follows it when it halves: each within
// 500ms (ten windows of 50ms), then stays within ±20% of the capacity, and
// the served calls' p99 in each phase, transients included, stays within
// twice the unloaded latency.
func TestAdaptive_LM6_SimulationFindsAndFollowsCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.NewAdaptive(simConfig)
		require.NoError(t, err)
		const unloaded = 10 * time.Millisecond
		phases := []simPhase{
			{length: 10 * time.Second, capacity: 40, unloaded: unloaded},
			{length: 10 * time.Second, capacity: 20, unloaded: unloaded},
		}
		res := simulate(t, lim, 160, phases, within20)
		for i, r := range res {
			t.Logf("phase %d (capacity %d): settled after %v, limit %d..%d, served %d, refused %d, p99 %v, baseline %v",
				i, phases[i].capacity, r.settled, r.minLimit, r.maxLimit, r.served, r.refused, r.p99, r.baseline)
			assert.GreaterOrEqual(t, r.settled, time.Duration(0), "phase %d never settled", i)
			assert.LessOrEqual(t, r.settled, 500*time.Millisecond, "phase %d settled too late", i)
			assert.LessOrEqual(t, r.p99, 2*unloaded, "phase %d p99", i)
			assert.Equal(t, unloaded, r.baseline, "phase %d baseline", i)
		}
	})
}

// During a long incident in which the dependency can take only a tenth of
// its calls (its latency grows with the load, as an overloaded service's
// does), the baseline stays at the unloaded latency for the whole minute,
// so the limit comes down within 500ms and stays near the reduced capacity
// instead of drifting back up, and it recovers within 1s (twenty windows)
// when the incident ends.
func TestAdaptive_LM7_BaselineHoldsThroughLongIncident(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.NewAdaptive(simConfig)
		require.NoError(t, err)
		const unloaded = 10 * time.Millisecond
		phases := []simPhase{
			{length: 5 * time.Second, capacity: 40, unloaded: unloaded},
			{length: time.Minute, capacity: 4, unloaded: unloaded},
			{length: 5 * time.Second, capacity: 40, unloaded: unloaded},
		}
		res := simulate(t, lim, 160, phases, func(ph simPhase) (lo, hi int) {
			if ph.capacity == 4 {
				return 1, 8 // never above twice the reduced capacity
			}
			return within20(ph)
		})
		for i, r := range res {
			t.Logf("phase %d (capacity %d): settled after %v, limit %d..%d, served %d, p99 %v, baseline %v",
				i, phases[i].capacity, r.settled, r.minLimit, r.maxLimit, r.served, r.p99, r.baseline)
			assert.Equal(t, unloaded, r.baseline, "phase %d baseline", i)
		}
		assert.GreaterOrEqual(t, res[1].settled, time.Duration(0), "incident: limit never settled at or below 8")
		assert.LessOrEqual(t, res[1].settled, 500*time.Millisecond, "incident: limit came down too late")
		assert.GreaterOrEqual(t, res[2].settled, time.Duration(0), "after the incident: limit never recovered")
		assert.LessOrEqual(t, res[2].settled, time.Second, "after the incident: limit recovered too late")
	})
}

// When the dependency becomes uniformly slower, at any load (three times
// the latency, same capacity), the limit first falls to MinLimit; a window
// there shows the new unloaded latency, the baseline rises to it, and the
// limit climbs back to within ±20% of the capacity within 5s (about 33
// windows of 150ms: the climb from MinLimit is a tenth per window).
func TestAdaptive_LM7_BaselineRelearnedAtMinLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := simConfig
		cfg.Window = 150 * time.Millisecond // five of the new unloaded latencies
		lim, err := concurrency.NewAdaptive(cfg)
		require.NoError(t, err)
		phases := []simPhase{
			{length: 5 * time.Second, capacity: 40, unloaded: 10 * time.Millisecond},
			{length: 20 * time.Second, capacity: 40, unloaded: 30 * time.Millisecond},
		}
		res := simulate(t, lim, 160, phases, within20)
		for i, r := range res {
			t.Logf("phase %d (unloaded %v): settled after %v, limit %d..%d, served %d, p99 %v, baseline %v",
				i, phases[i].unloaded, r.settled, r.minLimit, r.maxLimit, r.served, r.p99, r.baseline)
		}
		// The window at MinLimit that re-learns it may still hold a call or
		// two of the old latency.
		assert.GreaterOrEqual(t, res[1].baseline, 25*time.Millisecond)
		assert.LessOrEqual(t, res[1].baseline, 30*time.Millisecond)
		assert.GreaterOrEqual(t, res[1].settled, time.Duration(0), "never recovered")
		assert.LessOrEqual(t, res[1].settled, 5*time.Second, "recovered too late")
	})
}

// A 600s incident in which every call takes 1s (10ms unloaded, a capacity
// of 20, MaxLimit 200) does not become the limiter's new normal, whether
// the dependency's latency still grows with the load (its 20 workers each
// take 1s a call) or not at all (every call waits 1s on something
// else). The limit falls to MinLimit, re-learns 1s there, and goes back
// to the capacity it measured before the incident: from 30s into the
// incident to its end it stays within ±20% of 20 (it was climbing to
// MaxLimit and staying there after recovery with a baseline of 98ms,
// learned at a limit of 200). Within 60s of recovery it is within ±20% of
// 20 for good, and the baseline is the unloaded 10ms again.
func TestAdaptive_LM7_LongIncidentIsNotTheNewNormal(t *testing.T) {
	const unloaded = 10 * time.Millisecond
	for name, incident := range map[string]simPhase{
		"latency grows with load": {length: 600 * time.Second, capacity: 20, unloaded: time.Second},
		"latency fixed":           {length: 600 * time.Second, capacity: 20, unloaded: unloaded, fixed: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MaxLimit: 200})
				require.NoError(t, err)
				phases := []simPhase{
					{length: 10 * time.Second, capacity: 20, unloaded: unloaded},
					incident,
					{length: 70 * time.Second, capacity: 20, unloaded: unloaded},
				}
				res := simulate(t, lim, 200, phases, func(simPhase) (lo, hi int) { return 16, 24 })
				for i, r := range res {
					t.Logf("phase %d: settled after %v, limit %d..%d, served %d, p99 %v, baseline %v",
						i, r.settled, r.minLimit, r.maxLimit, r.served, r.p99, r.baseline)
				}
				assert.GreaterOrEqual(t, res[1].settled, time.Duration(0), "incident: limit never settled within 16..24")
				assert.LessOrEqual(t, res[1].settled, 30*time.Second, "incident: limit settled too late")
				assert.Equal(t, time.Second, res[1].baseline, "incident baseline")
				assert.GreaterOrEqual(t, res[2].settled, time.Duration(0), "after the incident: limit never settled within 16..24")
				assert.LessOrEqual(t, res[2].settled, 60*time.Second, "after the incident: limit settled too late")
				assert.Equal(t, unloaded, res[2].baseline, "baseline after the incident")
			})
		})
	}
}
