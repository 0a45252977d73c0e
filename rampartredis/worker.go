package rampartredis

import (
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// work is the one goroutine that talks to Redis for the breaker and
// applies the shared record to it, until Close. Everything it does is
// serial, so its state (gen, down, dirty, backoff) needs no lock.
func (s *Shared) work() {
	defer s.wg.Done()
	read := time.NewTimer(0) // the first read: reconcile at startup
	claim := time.NewTimer(0)
	claim.Stop()
	defer read.Stop()
	defer claim.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case t := <-s.own:
			s.publish(t, claim)
		case rec := <-s.msgs:
			if rec.gen > s.gen || rec.gen < s.gen && rec.gen == 1 {
				// Newer, or the first of a record that expired since.
				s.adopt(rec, claim)
			}
		case <-s.resub:
			s.reconcile(claim)
		case <-read.C:
			s.reconcile(claim)
			read.Reset(s.nextRead())
		case <-claim.C:
			s.claim(claim)
		}
		if s.dropped.Swap(false) {
			s.dirty = true
		}
	}
}

// nextRead is the wait before the next periodic read: Refresh, or the
// backoff while Redis fails.
func (s *Shared) nextRead() time.Duration {
	if s.down {
		return s.backoff
	}
	return s.cfg.Refresh
}

// failed notes a failed command: background work backs off.
func (s *Shared) failed() {
	s.down = true
	s.backoff = min(max(2*s.backoff, s.cfg.Timeout), s.cfg.MaxBackoff)
}

// succeeded notes a command that worked.
func (s *Shared) succeeded() {
	s.down, s.backoff = false, 0
}

// publish writes one of the breaker's own transitions to the record and
// adopts the outcome, unless the breaker has left the state since. While
// Redis fails it only marks the state to be published on reconnect.
func (s *Shared) publish(t circuitbreaker.Transition, claim *time.Timer) {
	if snap := s.br.State(); snap.Remote || snap.State != t.To {
		// Superseded: the record reached the breaker after the transition
		// was queued (its Open is the record's now), or the breaker moved on.
		return
	}
	if s.down {
		s.dirty = true
		return
	}
	to, cooldown := "closed", int64(0)
	var cause string
	if t.To == circuitbreaker.Open {
		to, cooldown = "open", durMS(t.RetryAfter)
		if t.Cause != nil {
			cause = t.Cause.Error()
		}
	}
	s.write(to, cooldown, cause, claim)
}

// write runs the transition script for state to and adopts its result.
func (s *Shared) write(to string, cooldown int64, cause string, claim *time.Timer) {
	rec, won, _, err := s.run(transitionScript, s.gen, to, cooldown, cause, s.cfg.ID,
		max(s.cfg.Quorum, 1), s.cfg.QuorumWindow.Milliseconds(), s.cfg.RecordTTL.Milliseconds(), s.ch)
	if err != nil {
		s.failed()
		s.dirty = true
		return
	}
	s.succeeded()
	if won {
		s.stats.published.Add(1)
	}
	s.adopt(rec, claim)
}

// durMS converts a cool-down to the script's milliseconds, rounded up;
// Forever is -1.
func durMS(d time.Duration) int64 {
	if d == circuitbreaker.Forever {
		return -1
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// reconcile reads the record and adopts it; if an own transition was not
// published (Redis was down, or the queue was full), it first publishes
// the breaker's current own state.
func (s *Shared) reconcile(claim *time.Timer) {
	rec, _, _, err := s.run(readScript)
	if err != nil {
		s.failed()
		return
	}
	s.succeeded()
	if s.dirty {
		s.dirty = false
		s.gen = rec.gen
		snap := s.br.State()
		switch {
		case snap.Remote:
		case snap.State == circuitbreaker.Open:
			var cause string
			if snap.Cause != nil {
				cause = snap.Cause.Error()
			}
			s.write("open", durMS(snap.RetryAfter), cause, claim)
			return
		case snap.State == circuitbreaker.Closed && rec.open:
			s.write("closed", 0, "", claim)
			return
		}
	}
	s.adopt(rec, claim)
}

// adopt applies the record to the breaker: a closed record clears an
// Open that came from the record; an open one opens the breaker for the
// remaining cool-down plus Timeout (the time to claim the probe when it
// ends), and the claim is tried when it ends.
func (s *Shared) adopt(rec record, claim *time.Timer) {
	s.gen = rec.gen
	claim.Stop()
	switch {
	case !rec.open:
		s.apply(circuitbreaker.Closed, 0, nil)
	case rec.rem < 0:
		s.apply(circuitbreaker.Open, circuitbreaker.Forever, rec.err())
	case rec.rem > 0:
		s.apply(circuitbreaker.Open, rec.rem+s.cfg.Timeout, rec.err())
		claim.Reset(rec.rem)
	default: // the cool-down has ended: a HalfOpen round
		s.claim(claim)
	}
}

// claim tries to claim the current HalfOpen round. The winner's breaker
// leaves its Open now and runs its probes; a loser stays open while the
// claim holds (plus Timeout), then tries again. If Redis fails, the
// breaker's Open ends by itself and it probes on its own.
func (s *Shared) claim(claim *time.Timer) {
	rec, won, hold, err := s.run(claimScript, s.gen, s.cfg.ID, s.cfg.ProbeClaim.Milliseconds())
	if err != nil {
		s.failed()
		return
	}
	s.succeeded()
	switch {
	case won:
		s.apply(circuitbreaker.Open, 0, nil)
	case rec.gen != s.gen || !rec.open || rec.rem != 0:
		s.adopt(rec, claim)
	default:
		hold = max(hold, time.Millisecond)
		s.apply(circuitbreaker.Open, hold+s.cfg.Timeout, rec.err())
		claim.Reset(hold)
	}
}

// apply applies a state to the breaker and counts it if it changed
// anything.
func (s *Shared) apply(to circuitbreaker.State, remaining time.Duration, cause error) {
	if changed, _ := s.br.ApplyRemote(to, remaining, cause); changed {
		s.stats.applied.Add(1)
	}
}

// err is the Cause of a breaker opened by the record.
func (r record) err() error { return &FleetOpenError{Cause: r.cause, By: r.by} }
