package sim

import (
	"context"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/record"
)

// ctxBackground is the context of every replayed call: recorded callers
// have no deadline the replay knows of.
var ctxBackground = context.Background()

// series is a result's series of points, bounded: when a point beyond max
// is needed, neighbours merge and the width doubles.
type series struct {
	width  time.Duration
	max    int
	points []Point
}

// at returns the point holding time t; the pointer is valid until the
// next call.
func (s *series) at(t time.Duration) *Point {
	for int(t/s.width) >= s.max {
		s.merge()
	}
	i := int(t / s.width)
	for len(s.points) <= i {
		s.points = append(s.points, Point{})
	}
	return &s.points[i]
}

func (s *series) merge() {
	n := (len(s.points) + 1) / 2
	for i := range n {
		p := s.points[2*i]
		if 2*i+1 < len(s.points) {
			q := s.points[2*i+1]
			p.Succeeded += q.Succeeded
			p.Failed += q.Failed
			p.Refused += q.Refused
			p.Sent += q.Sent
			p.Open += q.Open
			p.HalfOpen += q.HalfOpen
		}
		s.points[i] = p
	}
	clear(s.points[n:])
	s.points = s.points[:n]
	s.width *= 2
}

// spread adds the span [from, to) to the points it covers, each its part.
func (s *series) spread(from, to time.Duration, add func(p *Point, d time.Duration)) {
	for t := from; t < to; {
		p := s.at(t)
		end := min(to, (t/s.width+1)*s.width)
		add(p, end-t)
		t = end
	}
}

// bursts finds the failure bursts of a trace as its calls start, and
// measures how long the breaker took to open during each and to close
// after it.
type bursts struct {
	min      int
	timeout  time.Duration // the candidate's: a call at least this long fails
	run      int           // consecutive recorded failures so far
	runStart time.Duration // start of the run's first failure
	opened   bool          // the breaker opened during the run (or was open at its start)
	openAt   time.Duration
	pending  []time.Duration // ends of detected bursts, awaiting Closed

	n, detected           int
	detectSum, detectMax  time.Duration
	recovered             int
	recoverSum, recoverMx time.Duration
}

// observe sees the recorded call e start at at.
func (b *bursts) observe(e record.Entry, at time.Duration, r *run) {
	if e.Outcome == record.Failure || b.timeout > 0 && e.Duration >= b.timeout {
		if b.run == 0 {
			b.runStart = at
			b.opened = r.st.breaker != nil && r.state != circuitbreaker.Closed
			b.openAt = at
		}
		b.run++
		return
	}
	if b.run >= b.min {
		b.end()
		if b.opened {
			if r.state == circuitbreaker.Closed {
				b.recover(0)
			} else {
				b.pending = append(b.pending, at)
			}
		}
	}
	b.run = 0
}

// end counts the burst of the current run.
func (b *bursts) end() {
	b.n++
	if !b.opened {
		return
	}
	b.detected++
	d := b.openAt - b.runStart
	b.detectSum += d
	b.detectMax = max(b.detectMax, d)
}

func (b *bursts) recover(d time.Duration) {
	b.recovered++
	b.recoverSum += d
	b.recoverMx = max(b.recoverMx, d)
}

// openedAt sees the breaker open at at.
func (b *bursts) openedAt(at time.Duration) {
	if b.run > 0 && !b.opened {
		b.opened, b.openAt = true, at
	}
}

// closed sees the breaker close at at: traffic flows again after every
// detected burst that had ended.
func (b *bursts) closed(at time.Duration, _ *run) {
	for _, end := range b.pending {
		b.recover(at - end)
	}
	b.pending = b.pending[:0]
}

// finish counts a burst still going at the end of the trace, and fills
// res.
func (b *bursts) finish(res *Result) {
	if b.run >= b.min {
		b.end()
	}
	res.Bursts, res.Detected, res.Recovered = b.n, b.detected, b.recovered
	if b.detected > 0 {
		res.DetectMean = b.detectSum / time.Duration(b.detected)
		res.DetectMax = b.detectMax
	}
	if b.recovered > 0 {
		res.RecoverMean = b.recoverSum / time.Duration(b.recovered)
		res.RecoverMax = b.recoverMx
	}
}
