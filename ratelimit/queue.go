package ratelimit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/observe"
)

// queue is the line of calls waiting for tokens of one limiter. Only its
// head holds a reservation on lim; the calls behind it reserve nothing
// until the head leaves. That is what lets a waiter that gives up return
// its token for real: rate.Reservation.CancelAt can restore only the
// tokens that no later reservation has counted on, and the timers of
// later reservations are fixed once made. With one reservation at a time
// there is no later one, so the token goes back to lim and the next waiter,
// reserving after it, is due that much earlier.
type queue struct {
	lim *rate.Limiter
	// clk, when set, gives the times passed to lim (see clockNow) and
	// times the head's wait; nil means the system's clock.
	clk clock.Clock
	// n is len(waiters), kept so that the fast path can see an empty line
	// without taking mu. It may be stale by the time Allow runs; a call
	// that slips past a waiter that way takes a token that was free then,
	// which the waiter's reservation, if any, did not count on.
	n atomic.Int32

	mu sync.Mutex
	// waiters[0] is the head, the only waiter holding a reservation.
	// guarded by mu
	waiters []*waiter
}

// waiter is one call in a queue.
type waiter struct {
	turn chan struct{} // closed when the waiter becomes head; nil if it arrived as head
	// r is the waiter's reservation, made when it became head. guarded by
	// queue.mu until turn is closed, then owned by the waiter (read-only).
	r *rate.Reservation
}

// take takes one token from q.lim for a call, as [NewLayer] documents,
// and reports a refusal or a wait to obs, if not nil, under name.
func take(ctx context.Context, q *queue, mode Mode, name string, obs observe.Observer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Allow neither allocates nor changes lim when it fails, so it is the
	// fast path; only a call that must wait or be refused takes mu.
	if q.n.Load() == 0 && q.allow() {
		return nil
	}
	if mode == Refuse {
		err := q.reject()
		if err != nil && obs != nil {
			obs.Observe(ctx, observe.Event{Source: observe.RateLimit, Name: name, Kind: observe.Refused, Err: err})
		}
		return err
	}
	if obs == nil {
		return q.wait(ctx)
	}
	start := q.now()
	err := q.wait(ctx)
	e := observe.Event{Source: observe.RateLimit, Name: name, Kind: observe.Queued, Duration: q.now().Sub(start)}
	switch {
	case err != nil:
		e.Kind, e.Err = observe.Refused, err
	case e.Duration == 0:
		return nil // a token came due after Allow: no wait
	}
	obs.Observe(ctx, e)
	return err
}

// allow takes a token if one is free now.
func (q *queue) allow() bool {
	if q.clk == nil {
		return q.lim.Allow()
	}
	return q.lim.AllowN(q.now(), 1)
}

// now returns the time to pass to lim: the system's time, or, with a
// supplied clock, a time made of its monotonic reading alone, so that a
// step of its wall reading moves no token.
func (q *queue) now() time.Time { return clockNow(q.clk) }

// clockNow returns the system's time when clk is nil, else a time made of
// clk's monotonic reading alone: clock.MonotonicTime, which code that
// sets the limiter's rate on the same clock calls too.
func clockNow(clk clock.Clock) time.Time { return clock.MonotonicTime(clk) }

// pastDeadline reports whether a token due after delay would come at or
// after ctx's deadline. The deadline is system time, so with a supplied
// clock it is not compared.
func (q *queue) pastDeadline(ctx context.Context, now time.Time, delay time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && q.clk == nil && delay >= deadline.Sub(now)
}

// refuse takes a token if one is free and nobody waits for it, and
// otherwise returns the refusal.
func (q *queue) reject() error {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) > 0 {
		return &LimitedError{Wait: q.behind(now)}
	}
	r := q.lim.ReserveN(now, 1)
	delay := r.DelayFrom(now) // rate.InfDuration if r is not OK
	if delay == 0 {
		return nil // a token came due after Allow
	}
	r.CancelAt(now)
	if q.never(delay) {
		return &LimitedError{Wait: rate.InfDuration}
	}
	return &LimitedError{Wait: delay}
}

// wait joins the line and returns once the call's token is due, or with
// the refusal or the context's error.
func (q *queue) wait(ctx context.Context) error {
	now := q.now()
	w := &waiter{}
	q.mu.Lock()
	if len(q.waiters) == 0 {
		w.r = q.lim.ReserveN(now, 1)
		if w.r.DelayFrom(now) == 0 {
			q.mu.Unlock()
			return nil // a token came due after Allow
		}
		q.push(w)
		q.mu.Unlock()
		return q.serve(ctx, w)
	}
	// Refuse now a call that could only time out in the line: the due time
	// is what it would be if every waiter ahead takes its token in turn.
	delay := q.behind(now)
	if delay == rate.InfDuration {
		q.mu.Unlock()
		return &LimitedError{Wait: rate.InfDuration}
	}
	if q.pastDeadline(ctx, now, delay) {
		q.mu.Unlock()
		return &LimitedError{Wait: delay, PastDeadline: true}
	}
	w.turn = make(chan struct{})
	q.push(w)
	q.mu.Unlock()

	select {
	case <-w.turn:
	case <-ctx.Done():
		q.mu.Lock()
		if i := slices.Index(q.waiters, w); i > 0 {
			q.waiters = slices.Delete(q.waiters, i, i+1)
			q.n.Add(-1)
			q.mu.Unlock()
			return waitErr(ctx)
		}
		q.mu.Unlock()
		// w became head meanwhile; serve gives its turn on.
	}
	return q.serve(ctx, w)
}

// serve runs the head w until its token is due, its context is done, or it
// is refused, and then passes the head on.
func (q *queue) serve(ctx context.Context, w *waiter) error {
	now := q.now()
	delay := w.r.DelayFrom(now) // rate.InfDuration if w.r is not OK
	switch {
	case delay == 0:
		q.leave(w, false)
		return nil
	case q.never(delay):
		// No token will ever come (a burst of 0, or a limit of 0 with the
		// burst spent): refuse rather than wait forever.
		q.leave(w, true)
		return &LimitedError{Wait: rate.InfDuration}
	case ctx.Err() != nil:
		q.leave(w, true)
		return waitErr(ctx)
	}
	if q.pastDeadline(ctx, now, delay) {
		q.leave(w, true)
		return &LimitedError{Wait: delay, PastDeadline: true}
	}
	if q.clk != nil {
		if clock.Sleep(ctx, q.clk, delay) != nil {
			q.leave(w, true)
			return waitErr(ctx)
		}
		q.leave(w, false)
		return nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		q.leave(w, false)
		return nil
	case <-ctx.Done():
		q.leave(w, true)
		return waitErr(ctx)
	}
}

func waitErr(ctx context.Context) error {
	return fmt.Errorf("ratelimit: waiting for a token: %w", ctx.Err())
}

// push appends w to the line. The caller holds mu.
func (q *queue) push(w *waiter) {
	q.waiters = append(q.waiters, w)
	q.n.Add(1)
}

// leave removes the head w, giving its token back when cancel is true, and
// makes the next waiter head with a reservation of its own.
func (q *queue) leave(w *waiter, cancel bool) {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if cancel {
		// No reservation was made after w's, so all of its token returns.
		w.r.CancelAt(now)
	}
	q.waiters[0] = nil
	q.waiters = q.waiters[1:]
	q.n.Add(-1)
	if len(q.waiters) > 0 {
		next := q.waiters[0]
		next.r = q.lim.ReserveN(now, 1)
		close(next.turn)
	}
}

// never reports whether a reservation due after delay will never come due:
// x/time/rate reports a limiter that can never grant (a limit of 0 or less
// with its burst spent, or a burst of 0) either as a reservation that is not
// OK (a delay of rate.InfDuration) or as one due in about rate.InfDuration.
func (q *queue) never(delay time.Duration) bool {
	if delay == rate.InfDuration {
		return true
	}
	return delay > 0 && (!(q.lim.Limit() > 0) || (q.lim.Burst() < 1 && q.lim.Limit() != rate.Inf))
}

// behind returns how long from now until a call joining the back of the
// line would have its token, if every waiter takes its token in turn and
// the limit stays as it is: the head's token is due at its reservation's
// time, and each waiter after it one token's worth of time later. The
// caller holds mu, and the line is not empty.
func (q *queue) behind(now time.Time) time.Duration {
	head := q.waiters[0].r.DelayFrom(now)
	limit := float64(q.lim.Limit())
	if head == rate.InfDuration || !(limit > 0) {
		return rate.InfDuration
	}
	if limit == float64(rate.Inf) {
		return head
	}
	ns := float64(len(q.waiters)) / limit * float64(time.Second)
	if ns >= float64(math.MaxInt64-head) {
		return rate.InfDuration
	}
	return head + time.Duration(ns)
}
