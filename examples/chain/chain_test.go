package main

import (
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// modelConfig is the program's chain at half its scale (half the callers'
// rate, half of C's workers and queue, the same shares, brownout and
// timeouts), so that the naive run's storm of in-process requests stays
// quick under the race detector.
var modelConfig = func() config {
	c := defaults
	c.rate, c.workers, c.queue, c.hopWorkers = defaults.rate/2, defaults.workers/2, defaults.queue/2, defaults.hopWorkers/2
	return c
}()

// The four targets, on a synctest model of the chain: the same tiers,
// clients and layers as the program, connected in-process instead of over
// loopback, with every time virtual and exact.
func TestChain_Targets(t *testing.T) {
	var runs []summary
	for _, rampartRun := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			rec, err := run(modelConfig, &inProcess{}, rampartRun)
			if err != nil {
				t.Fatal(err)
			}
			name := "naive"
			if rampartRun {
				name = "rampart"
			}
			runs = append(runs, summarize(name, modelConfig, rec))
		})
	}
	var b testWriter
	table(&b, modelConfig, runs)
	t.Log("\n" + string(b))
	naive, rp := runs[0], runs[1]
	assert.LessOrEqual(t, rp.MaxAttemptsAtCPerRequest, 1.5, "rampart: attempts at C per caller request")
	assert.LessOrEqual(t, rp.WastedShareAtC, 0.05, "rampart: wasted work at C")
	assert.GreaterOrEqual(t, rp.MinCriticalOK, 0.95, "rampart: critical success in every window")
	assert.Less(t, rp.OK[0], rp.OK[1], "rampart: sheddable shed before default")
	assert.GreaterOrEqual(t, rp.Recovered, time.Duration(0), "rampart: recovered")
	assert.LessOrEqual(t, rp.Recovered, defaults.coolDown+time.Second, "rampart: recovered in time")
	assert.Greater(t, naive.MaxAttemptsAtCPerRequest, 4.0, "naive: retries multiply")
	assert.Greater(t, naive.WastedShareAtC, 0.5, "naive: most of C's work is wasted")
	assert.Equal(t, time.Duration(-1), naive.Recovered, "naive: metastable, never recovers")
}

type testWriter []byte

func (w *testWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

// The chart is written where asked, as a PNG.
func TestChain_Chart(t *testing.T) {
	cfg := defaults
	cfg.healthy, cfg.fault, cfg.after = time.Second, time.Second, time.Second
	var runs []summary
	for _, rampartRun := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			rec, err := run(cfg, &inProcess{}, rampartRun)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, summarize("run", cfg, rec))
		})
	}
	path := t.TempDir() + "/chain.png"
	if err := writeChart(cfg, runs, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	assert.Equal(t, "\x89PNG", string(b[:4]))
}
