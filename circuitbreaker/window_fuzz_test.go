package circuitbreaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// windowModel is a naive FailureRate: it keeps every outcome and counts
// the ones in the window from scratch.
type windowModel struct {
	size, buckets, minCalls int
	width                   time.Duration
	ratio                   float64
	events                  []windowEvent
}

type windowEvent struct {
	at      time.Duration
	failure bool
}

func (m *windowModel) counters(now time.Duration) circuitbreaker.Counters {
	var c circuitbreaker.Counters
	for i, e := range m.events {
		in := i >= len(m.events)-m.size
		if m.width > 0 {
			idx, cur := int64(e.at/m.width), int64(now/m.width)
			in = idx > cur-int64(m.buckets) && idx <= cur
		}
		if in {
			c.Calls++
			if e.failure {
				c.Failures++
			}
		}
	}
	return c
}

// FuzzWindow checks FailureRate's count and time windows, and when they
// trip, against windowModel.
func FuzzWindow(f *testing.F) {
	f.Add([]byte{0x03, 0x21, 1, 1, 0, 0x12, 1, 0x26, 1, 1, 0, 3, 1})
	f.Add([]byte{0x85, 0x32, 0, 1, 0x0a, 1, 0x1a, 0, 1, 0x3e, 1, 1, 0, 1})
	fuzzBubble(f, 2, runWindow)
}

func runWindow(t *testing.T, data []byte) {
	m := &windowModel{ratio: float64(data[1]&3+1) / 4}
	w := circuitbreaker.Window{}
	if data[0]&0x80 == 0 {
		m.size = int(data[0]&7) + 1
		m.minCalls = int(data[1]>>4)%m.size + 1
		w.Size, w.MinCalls = m.size, m.minCalls
	} else {
		m.size = len(data) // every event, subject to the buckets
		m.buckets = int(data[0]&7) + 1
		m.width = time.Duration(data[0]>>3&3+1) * time.Millisecond
		m.minCalls = int(data[1]>>4) + 1
		w.Period, w.Buckets, w.MinCalls = time.Duration(m.buckets)*m.width, m.buckets, m.minCalls
	}
	b := newBreaker(t, circuitbreaker.Config{
		Policy:       circuitbreaker.FailureRate{Window: w, Ratio: m.ratio},
		ResetTimeout: circuitbreaker.Forever,
	})
	start := time.Now()
	for i, op := range data[2:] {
		now := time.Since(start)
		switch op & 3 {
		case 0, 1:
			failure := op&3 == 1
			p, err := b.TryAcquire()
			require.NoError(t, err, "op %d", i)
			if failure {
				p.Failure(errBoom)
			} else {
				p.Success()
			}
			m.events = append(m.events, windowEvent{at: now, failure: failure})
			c := m.counters(now)
			tripped := c.Calls >= m.minCalls && float64(c.Failures)/float64(c.Calls) >= m.ratio
			if tripped {
				require.Equal(t, circuitbreaker.Open, b.State().State, "op %d: %+v", i, c)
				b.Reset()
				m.events = nil
			}
		case 2:
			time.Sleep(time.Duration(op>>2) * time.Millisecond / 2)
		case 3:
			b.Reset()
			m.events = nil
		}
		s := b.State()
		require.Equal(t, circuitbreaker.Closed, s.State, "op %d", i)
		require.Equal(t, m.counters(time.Since(start)), s.Counters, "op %d", i)
	}
}
