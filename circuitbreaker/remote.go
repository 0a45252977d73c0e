package circuitbreaker

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"
)

// ApplyRemote applies state shared by other replicas and reports whether
// it changed anything. Open with remaining > 0 opens for exactly remaining
// (then a probe), refusing with cause; remaining <= 0 ends a remote Open.
// HalfOpen grants this replica the fleet's probe round: a Closed or Open
// breaker enters a remote Open that has already ended (refusing with
// cause, or its own cause if cause is nil), so that its next acquire is a
// probe; remaining is ignored, and a breaker in HalfOpen, or in a remote
// Open that has ended, is left as it is. Closed closes only a remote Open
// (or its HalfOpen). A forced state is never changed. Any other to, or a
// nil b, is an error and changes nothing. Safe for concurrent use.
func (b *Breaker) ApplyRemote(to State, remaining time.Duration, cause error) (changed bool, err error) {
	if b == nil {
		return false, errors.New("circuitbreaker: ApplyRemote of a nil *Breaker")
	}
	if to != Open && to != Closed && to != HalfOpen {
		return false, fmt.Errorf("circuitbreaker: ApplyRemote: state must be Open, HalfOpen or Closed, got %v", to)
	}
	b.mu.Lock()
	defer b.unlock()
	b.setUp()
	now := b.mono()
	per := b.period.Load()
	from := stateOf(b.word.Load())
	remote := per.remote && (from == Open || from == HalfOpen)
	switch {
	case from == ForcedOpen || from == ForcedClosed:
		return false, nil
	case to == HalfOpen:
		if from == HalfOpen || remote && from == Open && per.until <= now {
			return false, nil
		}
		if cause == nil {
			cause = per.cause
		}
		b.enterWith(Open, cause, b.wall(), true, 0)
	case to == Closed:
		if !remote {
			return false, nil
		}
		b.enterWith(Closed, nil, b.wall(), true, 0)
	case remaining > 0:
		b.enterWith(Open, cause, b.wall(), true, remaining)
	case remote && from == Open && per.until > now:
		// End the remote Open now: the next acquire enters HalfOpen.
		b.enterWith(Open, per.cause, b.wall(), true, 0)
	default:
		return false, nil
	}
	return true, nil
}

// SubscribeFailures registers f for every failure the breaker counts while
// Closed (a probe's failure is a verdict, reported as a transition), and
// returns a function that removes it. f is called with the failure's
// error on the goroutine that reported it, after the breaker's lock is
// released: it is on the caller's path and must return at once (a
// non-blocking channel send; package rampartredis shares this evidence
// with other replicas in the background). A nil f is ignored, and so is
// any f for a nil b; a panic in f goes to [Config.ListenerPanic]. A
// success costs nothing more for it. Safe for concurrent use.
func (b *Breaker) SubscribeFailures(f func(error)) (unsubscribe func()) {
	if f == nil || b == nil {
		return func() {}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failureID++
	id := b.failureID
	b.onFailure.Store(appendFailureFunc(b.onFailure.Load(), failureFunc{id: id, f: f}))
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		var kept []failureFunc
		if fs := b.onFailure.Load(); fs != nil {
			kept = slices.DeleteFunc(slices.Clone(*fs), func(l failureFunc) bool { return l.id == id })
		}
		if len(kept) == 0 {
			b.onFailure.Store(nil)
		} else {
			b.onFailure.Store(&kept)
		}
	}
}

// failureFunc is a function registered with SubscribeFailures.
type failureFunc struct {
	id uint64
	f  func(error)
}

func appendFailureFunc(fs *[]failureFunc, l failureFunc) *[]failureFunc {
	var s []failureFunc
	if fs != nil {
		s = slices.Clone(*fs)
	}
	s = append(s, l)
	return &s
}

// reportFailure calls the failure functions with err if *counted; it is
// deferred by recordSlow so that it runs after the lock is released.
func (b *Breaker) reportFailure(counted *bool, err error) {
	if !*counted {
		return
	}
	fs := b.onFailure.Load()
	if fs == nil {
		return
	}
	for _, l := range *fs {
		b.callFailureFunc(l.f, err)
	}
}

// callFailureFunc calls f, recovering a panic and reporting it as a
// listener's.
func (b *Breaker) callFailureFunc(f func(error), err error) {
	defer func() {
		if v := recover(); v != nil {
			b.events.report(v, debug.Stack())
		}
	}()
	f(err)
}
