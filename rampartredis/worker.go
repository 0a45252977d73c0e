package rampartredis

import (
	"strconv"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// work is the one goroutine that talks to Redis for the breaker and
// applies the shared record to it, until Close. Everything it does is
// serial, so its state (gen, down, dirty, backoff, holding) needs no lock.
func (s *Shared) work() {
	defer s.wg.Done()
	claim := time.NewTimer(0)
	claim.Stop()
	defer claim.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case t := <-s.own:
			s.publish(t, claim)
		case rec := <-s.msgs:
			if newer(rec, s.gen) {
				s.noted()
				s.adopt(rec, claim)
			}
		case r := <-s.reads: // at startup, periodically, and on (re)subscribing
			if r.sent < s.news {
				// Sent before what the worker learnt since, which it
				// could undo (an older generation, a claim the worker
				// has won since): read again.
				s.hub.schedule(s, 0)
				break
			}
			s.reconcile(r, claim)
			s.hub.schedule(s, s.nextRead())
		case <-claim.C:
			s.claimTimer(claim)
		case <-s.evidence:
			s.report()
		case r := <-s.replies:
			s.replied(r, claim)
		}
		if s.dropped.Swap(false) {
			s.dirty = true
			s.hub.schedule(s, 0) // reconcile at once
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

// failed notes a failed command: background work backs off, and the
// next read comes after the backoff, not a whole Refresh later (the
// command may have been a publish: what it failed to write is written on
// that read). On a cluster it also has the client reload the slots.
func (s *Shared) failed() {
	s.down = true
	s.backoff = min(max(2*s.backoff, s.cfg.Timeout), s.cfg.MaxBackoff)
	s.hub.schedule(s, s.backoff)
	reloadSlots(s.client)
}

// succeeded notes a command that worked.
func (s *Shared) succeeded() {
	s.down, s.backoff = false, 0
}

// token is this replica's claim token for the round of generation gen.
func (s *Shared) token() string { return s.nonce + "@" + strconv.FormatInt(s.gen, 10) }

// verdictToken is the token a transition from HalfOpen carries: the
// claim's, if this replica holds the claim of the round, else none (a
// verdict of a round the fleet did not grant, which counts only as news
// over a closed record).
func (s *Shared) verdictToken(from circuitbreaker.State) string {
	if from == circuitbreaker.HalfOpen && s.holding {
		return s.token()
	}
	return ""
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
	s.write(to, cooldown, cause, s.verdictToken(t.From), claim)
}

// write runs the transition script for state to and adopts its result.
func (s *Shared) write(to string, cooldown int64, cause, token string, claim *time.Timer) {
	rec, won, _, err := s.run(transitionScript, s.gen, to, cooldown, cause, s.cfg.ID,
		max(s.cfg.Quorum, 1), s.cfg.QuorumWindow.Milliseconds(), s.cfg.RecordTTL.Milliseconds(), s.ch, token)
	if err != nil {
		s.failed()
		s.dirty = true
		return
	}
	s.succeeded()
	s.noted()
	if won {
		s.stats.published.Add(1)
	} else if token != "" {
		s.holding = false // fenced: the claim had lapsed
	}
	s.adopt(rec, claim)
}

// durMS converts a cool-down to the script's milliseconds, rounded up;
// Forever is -1.
func durMS(d time.Duration) int64 {
	if d == rampart.Forever {
		return -1
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// reconcile adopts the record the hub read. If an own transition was not
// published (Redis was down, or the queue was full), the breaker's
// current own state is first offered to the record under its rules: an
// own Open is news over a closed record (a trip report with a quorum);
// over an open one, and for an own Closed, only a verdict of the round
// this replica still holds the claim of counts. Whatever the script
// decides, the replica then adopts the record it finds.
func (s *Shared) reconcile(r readResult, claim *time.Timer) {
	rec, err := r.rec, r.err
	if err != nil {
		s.failed()
		return
	}
	s.succeeded()
	if s.dirty {
		s.dirty = false
		snap := s.br.State()
		switch {
		case snap.Remote:
		case snap.State == circuitbreaker.Open && (!rec.open || s.holding):
			var cause string
			if snap.Cause != nil {
				cause = snap.Cause.Error()
			}
			s.write("open", durMS(snap.RetryAfter), cause, s.verdictToken(circuitbreaker.HalfOpen), claim)
			s.sync()
			return
		case snap.State == circuitbreaker.Closed && rec.open && s.holding:
			s.write("closed", 0, "", s.token(), claim)
			s.sync()
			return
		}
	}
	s.adopt(rec, claim)
	s.sync()
}

// sync notes that the record has been read and applied.
func (s *Shared) sync() { s.syncedOnce.Do(func() { close(s.synced) }) }

// adopt applies the record to the breaker: a closed record clears an
// Open that came from the record; an open one opens the breaker for the
// remaining cool-down plus Timeout (the time to claim the probe when it
// ends), and the claim is tried when it ends.
func (s *Shared) adopt(rec record, claim *time.Timer) {
	if rec.gen != s.gen {
		s.gen, s.holding, s.lapsed = rec.gen, false, false
	}
	switch {
	case !rec.open:
		claim.Stop()
		s.holding, s.lapsed = false, false
		s.apply(circuitbreaker.Closed, 0, nil)
	case rec.rem < 0:
		claim.Stop()
		s.apply(circuitbreaker.Open, rampart.Forever, rec.err())
	case rec.rem > 0:
		s.apply(circuitbreaker.Open, rec.rem+s.cfg.Timeout, rec.err())
		claim.Reset(rec.rem)
	case s.holding:
		// The cool-down has ended and the round is this replica's: the
		// claim timer renews the claim or lets it lapse.
	case s.lapsed:
		// This replica gave the round up: the claim timer claims again
		// once its claim would have lapsed, if no other replica has.
	default: // the cool-down has ended: a HalfOpen round
		s.claim(claim)
	}
}

// claimTimer runs when the claim timer fires: a replica that holds the
// claim renews it while its breaker is probing and otherwise lets it
// lapse, staying Open until it would have; a replica that does not, tries
// to claim the round.
func (s *Shared) claimTimer(claim *time.Timer) {
	if s.holding {
		snap := s.br.State()
		probing := snap.Remote && snap.State == circuitbreaker.HalfOpen &&
			snap.ProbesInFlight+snap.ProbesSucceeded+snap.ProbesFailed > 0
		if !probing {
			// No call came to be a probe: give the round up to a
			// replica that has some. The claim is deleted at once, for
			// the others' next read to take, and this replica does not
			// claim again before the claim would have lapsed: the
			// claim script renews a token that is still there, so a
			// read of its own would otherwise take the round back, and
			// a replica without calls would hold the fleet open for as
			// long as it got none.
			s.holding, s.lapsed = false, true
			s.noted()
			rest := s.cfg.ProbeClaim - s.cfg.ProbeClaim/2
			s.apply(circuitbreaker.Open, rest+s.cfg.Timeout, snap.Cause)
			claim.Reset(rest)
			s.release(claim)
			return
		}
	}
	s.lapsed = false
	s.claim(claim)
}

// release deletes this replica's claim of the round, if it is still
// there, and adopts the record if it has moved on. If Redis fails, the
// claim lapses by itself.
func (s *Shared) release(claim *time.Timer) {
	rec, _, _, err := s.run(releaseScript, s.token())
	if err != nil {
		s.failed()
		return
	}
	s.succeeded()
	if newer(rec, s.gen) {
		s.adopt(rec, claim)
	}
}

// claim tries to claim (or, holding it, renews) the current HalfOpen
// round. The winner's breaker is granted the round (ApplyRemote
// HalfOpen: its next call is a probe) and renews the claim halfway
// through; a loser stays open while the claim holds (plus Timeout), then
// tries again. If Redis fails, the breaker's Open ends by itself and it
// probes on its own; its verdict then counts only as news.
func (s *Shared) claim(claim *time.Timer) {
	rec, won, hold, err := s.run(claimScript, s.gen, s.token(), s.cfg.ProbeClaim.Milliseconds())
	if err != nil {
		s.failed()
		if s.holding {
			claim.Reset(s.backoff) // renew again soon: the claim may still hold
		}
		return
	}
	s.succeeded()
	s.noted()
	switch {
	case won:
		s.holding = true
		s.apply(circuitbreaker.HalfOpen, 0, rec.err())
		claim.Reset(s.cfg.ProbeClaim / 2)
	case rec.gen != s.gen || !rec.open || rec.rem != 0:
		s.adopt(rec, claim)
	default:
		s.holding = false
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

// report starts a report of the failures counted since the last one
// (Config.Failures), unless one is in flight: the script runs on a
// goroutine of its own, so that while it waits for Redis the worker goes
// on applying the record (the Open that another replica's report made,
// arriving by pub/sub, must not wait for this replica's reply), and the
// failures counted meanwhile go in the next report, sent when the reply
// comes. While Redis fails they are dropped: the breaker decides alone,
// and evidence that old would count late.
func (s *Shared) report() {
	if s.reporting {
		return
	}
	n := s.unreported.Swap(0)
	if n == 0 || s.down {
		return
	}
	s.mu.Lock()
	err := s.lastFailure
	s.mu.Unlock()
	var cause string
	if err != nil {
		cause = err.Error()
	}
	s.reporting = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		rec, won, _, err := s.run(evidenceScript, n, s.cfg.FailureWindow.Milliseconds(), s.cfg.Failures,
			max(s.cfg.Quorum, 1), s.cfg.ID, durMS(s.cfg.CoolDown), cause, s.cfg.RecordTTL.Milliseconds(), s.ch)
		s.replies <- reply{n: n, rec: rec, won: won, err: err} // room for the one in flight
	}()
}

// reply is the outcome of a report of n failures.
type reply struct {
	n   int64
	rec record
	won bool
	err error
}

// replied adopts a report's reply, unless the worker adopted a newer
// record while the report was in flight, and sends the failures counted
// meanwhile.
func (s *Shared) replied(r reply, claim *time.Timer) {
	s.reporting = false
	if r.err != nil {
		s.failed()
		return
	}
	s.succeeded()
	s.stats.reported.Add(r.n)
	if r.won {
		s.stats.published.Add(1)
	}
	if newer(r.rec, s.gen) {
		s.noted()
		s.adopt(r.rec, claim)
	}
	s.report()
}

// newer reports whether rec is newer than the record of generation gen
// that the replica adopted: a later generation, or the first of a record
// that expired (or was lost with Redis) since.
func newer(rec record, gen int64) bool {
	return rec.gen > gen || rec.gen < gen && rec.gen == 1
}
