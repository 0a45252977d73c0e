package circuitbreaker_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// model is a deliberately plain reference implementation of the contract
// for the Consecutive policy, kept in one goroutine with its own clock.
type model struct {
	failures, successes, maxProbes int
	cooldown0, maxCooldown, lease  time.Duration

	now       time.Duration
	state     circuitbreaker.State
	epoch     int
	run       int
	cooldown  time.Duration
	until     time.Duration
	probes    map[int]time.Duration // permit id -> lease expiry
	succeeded int
	cause     error
	swState   circuitbreaker.State // the switch: Closed means released
	edges     []string
}

type modelPermit struct {
	id, epoch int
	state     circuitbreaker.State
	done      bool
}

func (m *model) enter(to circuitbreaker.State, cause error) {
	if m.state != to || to == circuitbreaker.ForcedOpen {
		m.edges = append(m.edges, m.state.String()+">"+to.String())
	}
	m.state = to
	m.epoch++
	switch to {
	case circuitbreaker.Closed:
		m.run, m.cooldown = 0, m.cooldown0
	case circuitbreaker.HalfOpen:
		m.probes, m.succeeded, m.run = map[int]time.Duration{}, 0, 0
	case circuitbreaker.Open, circuitbreaker.ForcedOpen:
		m.cause = cause
		m.until = m.now + m.cooldown
	}
}

// acquire returns a permit, or the RetryAfter of the refusal.
func (m *model) acquire(id int) (*modelPermit, time.Duration) {
	switch m.state {
	case circuitbreaker.Closed, circuitbreaker.ForcedClosed:
		return &modelPermit{id: id, epoch: m.epoch, state: m.state}, 0
	case circuitbreaker.ForcedOpen:
		return nil, rampart.Forever
	case circuitbreaker.Open:
		if m.now < m.until {
			return nil, m.until - m.now
		}
		m.enter(circuitbreaker.HalfOpen, nil)
	}
	n := 0
	for _, exp := range m.probes {
		if exp > m.now {
			n++
		}
	}
	if n >= m.maxProbes {
		return nil, 0
	}
	m.probes[id] = m.now + m.lease
	return &modelPermit{id: id, epoch: m.epoch, state: circuitbreaker.HalfOpen}, 0
}

func (m *model) finish(p *modelPermit, o rampart.Outcome, err error) bool {
	if p.done {
		return false
	}
	p.done = true
	if p.epoch != m.epoch {
		return false
	}
	switch p.state {
	case circuitbreaker.Closed:
		switch o {
		case rampart.Success:
			m.run = 0
		case rampart.Failure:
			m.run++
			if m.run >= m.failures {
				m.cooldown = m.cooldown0
				m.enter(circuitbreaker.Open, err)
			}
		default:
			return false
		}
		return true
	case circuitbreaker.HalfOpen:
		exp, ok := m.probes[p.id]
		delete(m.probes, p.id)
		if !ok || exp <= m.now || o == rampart.Ignored {
			return false
		}
		if o == rampart.Failure {
			if m.maxCooldown != 0 {
				m.cooldown = min(2*m.cooldown, m.maxCooldown)
			}
			m.enter(circuitbreaker.Open, err)
			return true
		}
		m.succeeded++
		if m.succeeded >= m.successes {
			m.enter(circuitbreaker.Closed, nil)
		}
		return true
	}
	return false
}

func (m *model) snapshot() circuitbreaker.Snapshot {
	s := circuitbreaker.Snapshot{State: m.state}
	switch m.state {
	case circuitbreaker.Closed: // ForcedClosed has no counters (CB11)
		s.Counts.ConsecutiveFailures = m.run
	case circuitbreaker.Open:
		s.Cause = m.cause
		if m.now < m.until {
			s.RetryAfter = m.until - m.now
		} else {
			s.State = circuitbreaker.HalfOpen
		}
	case circuitbreaker.HalfOpen:
		s.Cause = m.cause
		for _, exp := range m.probes {
			if exp > m.now {
				s.ProbesInFlight++
			}
		}
		s.ProbesSucceeded = m.succeeded
	case circuitbreaker.ForcedOpen:
		s.Cause, s.RetryAfter = m.cause, rampart.Forever
	}
	return s
}

func (m *model) reset() {
	if m.state == circuitbreaker.ForcedOpen || m.state == circuitbreaker.ForcedClosed {
		m.run, m.cooldown = 0, m.cooldown0
		return
	}
	m.enter(circuitbreaker.Closed, nil)
}

func (m *model) flip(to circuitbreaker.State, reason error) {
	if m.swState == to && to != circuitbreaker.ForcedOpen {
		return
	}
	m.swState = to
	if to == circuitbreaker.Closed && m.state != circuitbreaker.ForcedOpen && m.state != circuitbreaker.ForcedClosed {
		return
	}
	m.enter(to, reason)
}

var fuzzErrs = []error{errors.New("e0"), errors.New("e1"), errors.New("e2")}

// FuzzBreaker drives a breaker with the Consecutive policy through an
// arbitrary sequence of acquires, outcomes, time steps, resets and switch
// flips, and checks every result, every snapshot and the transitions the
// listener saw against the model.
func FuzzBreaker(f *testing.F) {
	f.Add([]byte{2, 1, 1, 0, 0, 0, 0x12, 0x22, 0, 0x34, 0, 0x11, 0x07})
	f.Add([]byte{0, 0, 2, 3, 0, 0, 0, 0x22, 0, 0x40, 0, 0, 0, 0x10, 0x21, 0x32, 0x05, 0x06})
	f.Add([]byte{1, 2, 0, 1, 0, 0x26, 0, 0x08, 0, 0x09, 0, 0x13, 0x0a, 0, 0x10})
	fuzzBubble(f, 4, runModel)
}

func runModel(t *testing.T, data []byte) {
	m := &model{
		failures:  int(data[0]%4) + 1,
		successes: int(data[1]%3) + 1,
		maxProbes: int(data[2]%3) + 1,
		cooldown0: time.Duration(data[3]%4) * 30 * time.Millisecond,
		lease:     time.Duration(data[3]/4%4+1) * 50 * time.Millisecond,
	}
	if data[3]&0x80 != 0 && m.cooldown0 > 0 {
		m.maxCooldown = 4 * m.cooldown0
	}
	m.cooldown = m.cooldown0
	reset := m.cooldown0
	if reset == 0 {
		reset = circuitbreaker.Immediate
	}
	sw := &circuitbreaker.Switch{}
	b, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:      circuitbreaker.Consecutive{Failures: m.failures, Successes: m.successes},
		CoolDown:    reset,
		MaxCoolDown: m.maxCooldown,
		MaxProbes:   m.maxProbes,
		ProbeLease:  m.lease,
		Switch:      sw,
	})
	require.NoError(t, err)
	rec := record(b)

	var (
		permits []*circuitbreaker.Permit
		mperms  []*modelPermit
	)
	for i, op := range data[4:] {
		arg := int(op >> 3)
		switch op & 7 {
		case 0, 1: // acquire
			p, err := b.TryAcquire()
			mp, retry := m.acquire(len(permits))
			if mp == nil {
				var oe *circuitbreaker.OpenError
				require.ErrorAs(t, err, &oe, "op %d: model rejects", i)
				require.Equal(t, retry, oe.RetryAfter(), "op %d", i)
				continue
			}
			require.NoError(t, err, "op %d: model admits", i)
			permits = append(permits, &p)
			mperms = append(mperms, mp)
		case 2, 3, 4: // finish a permit: success, failure, ignore
			if len(permits) == 0 {
				continue
			}
			k := arg % len(permits)
			o := rampart.Outcome(op&7 - 2)
			e := fuzzErrs[arg%len(fuzzErrs)]
			var got bool
			switch o {
			case rampart.Success:
				got = permits[k].Success()
			case rampart.Failure:
				got = permits[k].Failure(e)
			default:
				permits[k].Ignore()
			}
			want := m.finish(mperms[k], o, e)
			if o != rampart.Ignored {
				require.Equal(t, want, got, "op %d: outcome %v of permit %d counted", i, o, k)
			}
		case 5: // advance time
			d := time.Duration(arg+1) * 5 * time.Millisecond
			time.Sleep(d)
			m.now += d
		case 6: // reset
			b.Reset()
			m.reset()
		case 7: // the switch
			switch arg % 4 {
			case 0:
				sw.ForceOpen(fuzzErrs[arg%3])
				m.flip(circuitbreaker.ForcedOpen, fuzzErrs[arg%3])
			case 1:
				sw.ForceClosed()
				m.flip(circuitbreaker.ForcedClosed, nil)
			default:
				sw.Release()
				m.flip(circuitbreaker.Closed, nil)
			}
		}
		require.Equal(t, m.snapshot(), b.State(), "op %d (%#x)", i, op)
	}
	require.Equal(t, m.edges, nonNil(rec.edges()), fmt.Sprintf("transitions for %x", data))
}

func nonNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// fuzzBubble fuzzes run with inputs of at least minLen bytes, cut to 512
// (longer inputs add time, not coverage), each in its own synctest bubble.
func fuzzBubble(f *testing.F, minLen int, run func(*testing.T, []byte)) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < minLen {
			return
		}
		data = data[:min(len(data), 512)]
		synctest.Test(t, func(t *testing.T) { run(t, data) })
	})
}
