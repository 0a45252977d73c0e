package hedge

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/observe"
)

// NewLayer returns a layer that hedges the hedgeable requests of the
// services it wraps, as configured by cfg. It returns an error naming the
// first invalid field of cfg (see [Config]); the error matches no sentinel.
//
// Each service the layer wraps learns its own latency percentile; the
// Budget in cfg is shared by all of them. The returned layer and the
// services it builds are safe for concurrent use.
//
// A call through a wrapped service behaves as follows. A request that
// cfg.Hedgeable rejects goes to the inner service once, unchanged. For a
// hedgeable request the layer deposits into the Budget once and sends the
// original attempt; then, while no attempt has been accepted, each time the
// delay (Delay or the learned percentile) has passed since the latest
// attempt started, it withdraws from the Budget and sends one more, up to
// MaxAttempts in total. It stops sending when the Budget refuses (and does
// not ask again in that call), when the caller's context is done, when
// every attempt sent so far has failed (a failure, an error or an outcome
// cfg.Accept rejects, does not trigger a hedge: retrying failures is the
// retry layer's job), or when an attempt fails with an error that refuses
// copies: one matching [rampart.ErrOpen] (a breaker below is open), or one
// whose [rampart.Hint] is [rampart.Forever] (the server says not to
// retry, as a negative grpc-retry-pushback-ms does; gRFC A6 sends no
// further hedges then), or one whose outcome cfg.Hint says so of. Attempts
// already sent go on.
//
// Each copy's context says which attempt it is ([rampart.WithAttempt]):
// the caller's attempt ([rampart.AttemptOf], 1 when it carries none) plus
// the copy's number, 1 for the first hedge. So a copy reaches the next
// hop as a retry does, and a retry layer there does not retry it again:
// a hedge adds one attempt at each hop below, not one per retry there.
// The original attempt runs with the caller's context.
//
// The first accepted outcome (by default, the first with a nil error) is
// the answer, returned as the attempt returned it. Each attempt gets its
// own cancelable context derived from the caller's; when an attempt is
// accepted, every other attempt's context is cancelled at once, and their
// responses go to cfg.Discard. The winner's context is cancelled before
// Call returns, or handed to its response by cfg.Detach. Call returns only
// after every attempt it started has returned, so an inner service
// that ignores its context delays the answer until it returns.
//
// When no outcome is accepted, no response is lost: if only the original
// attempt ran, its response and error are returned unchanged; otherwise,
// if some attempt returned a rejected response with a nil error (an HTTP
// 503, say), the first such response to arrive is returned with a nil
// error and the others go to Discard; otherwise every attempt failed with
// an error, and Call returns the zero Resp and an [*AllFailedError]
// holding every attempt's error. When the caller's context ends, every
// attempt is cancelled and their outcomes are returned the same way.
//
// Panics reach the caller whichever attempt they happen in. The original
// attempt runs on the caller's goroutine, so its panic goes on from there,
// after the hedges have been cancelled and awaited. Each hedge runs on a
// goroutine of its own; a panic there (in the inner service, or in
// cfg.Accept, cfg.Hint, cfg.Discard, the Observer or the Budget called
// for it) is recovered on that goroutine, every other attempt is
// cancelled and awaited, and Call panics on the caller's goroutine with a
// [*rampart.PanicError] holding the value and the stack of the goroutine
// that panicked. So a breaker above counts it as a failure, and a retry
// layer above does not retry it, as with a panic of the original. A panic
// ends the call even after an attempt was accepted: the accepted response
// goes to cfg.Discard and is not returned, for a panic is a bug that an
// answer from another replica must not hide. When several attempts panic,
// the caller sees the first panic of the call; a crash prints both when
// the original attempt's came second. A hedge that exits its goroutine
// with runtime.Goexit (t.FailNow in a test double) makes Call exit the
// caller's goroutine the same way, after the other attempts are awaited,
// as it would have had the copy run there.
func NewLayer[Req, Resp any](cfg Config[Req, Resp]) (rampart.Layer[Req, Resp], error) {
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return layer[Req, Resp]{s: s}, nil
}

type layer[Req, Resp any] struct {
	s settings[Req, Resp]
}

// Wrap wraps inner; a nil inner gives a service whose every call fails
// with an error matching [rampart.ErrNilService].
func (l layer[Req, Resp]) Wrap(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
	if nilservice.Is(inner) {
		return rampart.Failing[Req, Resp]("hedge: Wrap")
	}
	svc := &service[Req, Resp]{settings: l.s, inner: inner}
	if l.s.quantile > 0 {
		svc.lat = newLatencies(l.s.quantile, l.s.window, l.s.minSamples, l.s.delay)
	}
	return svc
}

type service[Req, Resp any] struct {
	settings[Req, Resp]
	inner rampart.Service[Req, Resp]
	lat   *latencies // nil for a fixed delay
}

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if s.maxAttempts == 1 || !s.hedgeable(req) {
		return s.inner.Call(ctx, req)
	}
	s.budget.Deposit()

	c := &call[Req, Resp]{s: s, parent: ctx, req: req, started: 1, inflight: 1, kept: -1, delay: s.delay}
	if s.lat != nil {
		c.delay = s.lat.current()
	}
	actx, cancel := context.WithCancel(ctx)
	c.cancels[0] = cancel
	// The timer holds a slot in wg until it decides not to send another
	// hedge or is stopped; c.mu keeps it from reading c.timer before the
	// assignment.
	c.wg.Add(1)
	c.mu.Lock()
	c.timer = time.AfterFunc(c.delay, c.hedge)
	c.mu.Unlock()

	// The original attempt runs here. If it panics, the deferred abort
	// cancels and awaits the hedges before the panic travels on; the flag
	// tells a panic from a normal return without recovering, as
	// singleflight does.
	normal := false
	defer func() {
		if !normal {
			c.abort()
		}
	}()
	start := time.Now()
	resp, err := s.inner.Call(actx, req)
	c.finish(0, start, resp, err)
	normal = true

	// Every hedge and the timer hold a slot in wg, so after Wait nothing
	// touches c again and its fields are read without the lock.
	c.wg.Wait()
	if c.failed {
		// A hedge panicked or exited its goroutine: its end is raised
		// here, on the caller's goroutine, now that every attempt has
		// returned.
		c.cancelAllBut(-1)
		c.discardKept()
		if c.panicked != nil {
			panic(c.panicked)
		}
		runtime.Goexit()
	}
	if s.obs != nil && c.won && c.started > 1 {
		s.obs.Observe(ctx, observe.Event{Source: observe.Hedge, Name: s.name, Kind: observe.HedgeWon, Attempt: c.kept + 1})
	}
	switch {
	case c.kept < 0:
		// Several attempts ran and each failed with an error.
		c.cancelAllBut(-1)
		var zero Resp
		return zero, &AllFailedError{Errs: c.errs[:c.started:c.started]}
	case c.err != nil || s.detach == nil:
		c.cancelAllBut(-1)
		return c.resp, c.err
	default:
		c.cancelAllBut(c.kept)
		return s.detach(c.resp, c.cancels[c.kept]), nil
	}
}

// call is the state of one hedged call, shared by its attempts and timer.
// It lives no longer than the Call that made it, so holding the caller's
// context in it does not outlive the request, as a context in a struct
// usually would; the timer's callback has no other way to reach it.
type call[Req, Resp any] struct {
	s      *service[Req, Resp]
	parent context.Context // the caller's; every attempt's context derives from it
	req    Req
	delay  time.Duration
	wg     sync.WaitGroup // one slot per hedge goroutine, one for the timer

	mu       sync.Mutex
	timer    *time.Timer                          // guarded by mu
	cancels  [MaxAttemptsLimit]context.CancelFunc // guarded by mu; by attempt, fixed once stopped
	stopped  bool                                 // guarded by mu; no more hedges will be sent
	started  int                                  // guarded by mu; attempts sent
	inflight int                                  // guarded by mu; attempts not yet returned
	won      bool                                 // guarded by mu; an attempt was accepted
	wonAt    time.Time                            // guarded by mu; when, if won and a delay is learned
	aborted  bool                                 // guarded by mu; the original attempt panicked or a hedge failed
	failed   bool                                 // guarded by mu; a hedge (or the timer) panicked or exited its goroutine before any other attempt did
	panicked *rampart.PanicError                  // guarded by mu; what the failed hedge panicked with, nil for runtime.Goexit
	kept     int                                  // guarded by mu; the attempt whose outcome is in resp and err, or -1
	resp     Resp                                 // guarded by mu; the outcome Call returns unless every attempt failed
	err      error                                // guarded by mu
	errs     []error                              // guarded by mu; by attempt, allocated on the first error
}

// hedge runs on the timer's goroutine and sends the next attempt, with a
// context of its own, unless the call no longer wants one.
func (c *call[Req, Resp]) hedge() {
	c.mu.Lock()
	// The Budget may be the user's: if Withdraw panics, c.mu is released
	// and the panic goes to the caller as a hedge's does; the timer's
	// slot in wg is its own to release, since it has fired.
	normal := false
	defer func() {
		if !normal {
			c.mu.Unlock()
			c.fail(recover())
			c.wg.Done()
		}
	}()
	refused := c.stopped || c.parent.Err() != nil || !c.s.budget.Withdraw()
	normal = true
	if refused {
		c.stopped = true
		c.mu.Unlock()
		c.wg.Done()
		return
	}
	i := c.started
	// The copy says which attempt it is, as a retry does, so that a hop
	// below does not retry it again: see rampart.WithAttempt.
	actx, cancel := context.WithCancel(rampart.WithAttempt(c.parent, max(1, rampart.AttemptOf(c.parent))+i))
	c.cancels[i] = cancel
	c.started++
	c.inflight++
	c.wg.Add(1)
	if c.started < c.s.maxAttempts {
		c.timer.Reset(c.delay) // the timer keeps its slot
	} else {
		c.stopped = true
		c.wg.Done()
	}
	// Taken under the lock, so the attempt starts before any win that
	// follows: a loser's elapsed time at the win is never negative.
	start := time.Now()
	c.mu.Unlock()
	go c.run(i, start, actx)
}

// run is hedge number i on its own goroutine. Everything the user gave
// that runs for the hedge runs here, inside the recovery: the Observer,
// the inner service, Accept, Hint and Discard.
func (c *call[Req, Resp]) run(i int, start time.Time, ctx context.Context) {
	defer c.wg.Done()
	normal := false
	defer func() {
		if !normal {
			c.fail(recover())
		}
	}()
	if c.s.obs != nil {
		c.s.obs.Observe(c.parent, observe.Event{Source: observe.Hedge, Name: c.s.name, Kind: observe.HedgeSent, Attempt: i + 1, Duration: c.delay})
	}
	resp, err := c.s.inner.Call(ctx, c.req)
	if err != nil && c.s.refunder != nil && errors.Is(err, rampart.ErrRefused) {
		c.s.refunder.Refund() // a layer below refused the hedge: it was not sent
	}
	c.finish(i, start, resp, err)
	normal = true
}

// fail runs on a hedge's goroutine, or the timer's, that is ending with a
// panic (r is its value) or with runtime.Goexit (r is nil; since Go 1.21
// panic(nil) recovers a *runtime.PanicNilError). Unless another attempt
// ended the call that way first, it decides the call: no more hedges, no
// answer, every attempt cancelled; Call raises it once all have returned.
// The stack is taken here, where the panicking frames are still on the
// goroutine's stack.
func (c *call[Req, Resp]) fail(r any) {
	var p *rampart.PanicError
	if r != nil {
		p = &rampart.PanicError{Value: r, Stack: debug.Stack()}
	}
	c.mu.Lock()
	first := !c.aborted
	if first {
		c.aborted, c.failed, c.panicked = true, true, p
		c.stopLocked()
	}
	c.mu.Unlock()
	if first {
		c.cancelAllBut(-1)
	}
}

// finish records the outcome of attempt i, which started at start. The
// first accepted outcome cancels every other attempt at once; the first
// rejected response with a nil error is kept in case no outcome is
// accepted.
func (c *call[Req, Resp]) finish(i int, start time.Time, resp Resp, err error) {
	var now time.Time // read only to learn a delay
	if c.s.lat != nil {
		now = time.Now()
	}
	accepted := err == nil
	if c.s.accept != nil {
		accepted = c.s.accept(resp, err)
	}
	refuses := !accepted && c.refusesCopies(resp, err)
	var (
		keep, won bool
		dropped   Resp // an earlier rejected response, dropped for the winner
		drop      bool
		lost      bool          // cancelled because another attempt won
		ran       time.Duration // how long it had run by then
	)
	c.mu.Lock()
	c.inflight--
	switch {
	case c.won || c.aborted:
		// The call is decided; this attempt lost.
		if c.won && !accepted && c.s.lat != nil {
			lost, ran = true, c.wonAt.Sub(start)
			if now.Before(c.wonAt) {
				ran = now.Sub(start)
			}
		}
	case accepted:
		if c.kept >= 0 {
			dropped, drop = c.resp, true
		}
		c.won, c.wonAt = true, now
		c.kept, c.resp, c.err = i, resp, err
		keep, won = true, true
		c.stopLocked()
	default:
		if refuses {
			c.stopLocked()
		}
		if err == nil && c.kept < 0 {
			c.kept, c.resp = i, resp
			keep = true
		}
		if err != nil {
			if c.errs == nil {
				c.errs = make([]error, c.s.maxAttempts)
			}
			c.errs[i] = err
		}
		if c.inflight == 0 {
			// Every attempt sent has failed: the call ends now rather than
			// sending a hedge of a failure. The only attempt's outcome is
			// returned unchanged.
			c.stopLocked()
			if c.started == 1 && err != nil {
				c.kept, c.resp, c.err = i, resp, err
				keep = true
			}
		}
	}
	c.mu.Unlock()
	if c.s.lat != nil {
		switch {
		case accepted:
			c.s.lat.record(now.Sub(start), false)
		case lost && ran >= c.delay:
			// A lower bound of the latency, known to be above the delay
			// this call used: see Config.Quantile.
			c.s.lat.record(ran, true)
		}
	}
	if won {
		// Hedging has stopped, so c.cancels no longer changes.
		c.cancelAllBut(i)
	}
	if c.s.discard == nil {
		return
	}
	if drop {
		c.s.discard(dropped)
	}
	if !keep {
		c.s.discard(resp)
	}
}

// cancelAllBut cancels the context of every attempt started except
// attempt keep (-1 for none). Hedging must have stopped, so that started
// and cancels no longer change; cancelling twice is harmless.
func (c *call[Req, Resp]) cancelAllBut(keep int) {
	c.mu.Lock()
	cancels := c.cancels[:c.started]
	c.mu.Unlock()
	for i, cancel := range cancels {
		if i != keep {
			cancel()
		}
	}
}

// stopLocked ensures no further hedge is sent. c.mu must be held. If the
// timer was pending, its slot in wg is released here; if it has already
// fired, its function is running or has run and releases the slot itself.
func (c *call[Req, Resp]) stopLocked() {
	if c.stopped {
		return
	}
	c.stopped = true
	if c.timer.Stop() {
		c.wg.Done()
	}
}

// abort runs on the caller's goroutine when the original attempt (or
// Accept, Hint or Discard called for it) panicked or exited the goroutine:
// it stops hedging, cancels and awaits the hedges, and discards any
// answer, since none is returned. The original's panic then goes on,
// unless a hedge panicked first: that panic, the first of the call, is
// raised here in its place (the runtime prints both if neither is
// recovered, and a recover sees the first).
func (c *call[Req, Resp]) abort() {
	c.mu.Lock()
	c.aborted = true
	c.stopLocked()
	c.mu.Unlock()
	c.cancelAllBut(-1)
	c.wg.Wait()
	c.discardKept()
	if c.panicked != nil {
		panic(c.panicked)
	}
}

// discardKept passes the response kept for the answer, if any, to
// Discard, when the call ends in a panic and returns none. Every attempt
// must have returned.
func (c *call[Req, Resp]) discardKept() {
	if c.kept >= 0 && c.s.discard != nil {
		c.s.discard(c.resp)
	}
}

// refusesCopies reports whether a failed attempt's outcome says that no
// copy should follow it: a breaker below is open (it would refuse them
// too), or the server's hint, in the error or by Config.Hint, says not to
// retry ([rampart.Forever], as a negative grpc-retry-pushback-ms is:
// gRFC A6 sends no further hedges after it).
func (c *call[Req, Resp]) refusesCopies(resp Resp, err error) bool {
	if c.s.hint != nil {
		if d, ok := c.s.hint(resp, err); ok && d == rampart.Forever {
			return true
		}
	}
	if err == nil {
		return false
	}
	if errors.Is(err, rampart.ErrOpen) {
		return true
	}
	d, ok := rampart.RetryAfter(err)
	return ok && d == rampart.Forever
}
