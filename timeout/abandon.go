package timeout

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/ctxerr"
)

// States of an abandonable call. The caller and the call's goroutine race
// to move the state out of running with a compare-and-swap; exactly one of
// them wins, and so decides whether the result goes to the caller or to
// Config.Late. No result is both returned and passed to Late, and none is
// lost.
const (
	running int32 = iota
	returned
	abandoned
)

// call is one inner call running on its own goroutine in Abandon mode.
type call[Resp any] struct {
	state atomic.Int32
	// done is closed by the goroutine after it has written resp, err and
	// panicked and won the state race; the close happens before the
	// caller's receive, so the caller then reads those fields safely.
	done     chan struct{}
	resp     Resp
	err      error
	panicked *rampart.PanicError
	goexited bool // the inner call ended with runtime.Goexit
}

func (s *service[Req, Resp]) callAbandon(parent context.Context, req Req, b bounds) (Resp, error) {
	tctx, cancel := parent, context.CancelFunc(func() {})
	if b.first {
		tctx, cancel = b.context(parent)
	}
	c := &call[Resp]{done: make(chan struct{})}
	go s.run(tctx, req, c)

	select {
	case <-c.done:
	case <-tctx.Done():
		if c.state.CompareAndSwap(running, abandoned) {
			cancel()
			var zero Resp
			if parent.Err() != nil {
				return zero, ctxerr.Reason(parent)
			}
			// tctx is done and its parent is not: the layer's deadline fired.
			s.l.fired(parent, b.timeout)
			return zero, &Error{After: b.timeout}
		}
		// The call returned at the same moment and won the race: its
		// result is the answer, as if it had arrived first.
		<-c.done
	}

	if c.panicked != nil {
		cancel()
		panic(c.panicked)
	}
	if c.goexited {
		// As singleflight does: the caller's goroutine exits too, as it
		// would have had the call run on it (t.FailNow in a test double).
		cancel()
		runtime.Goexit()
	}
	if c.err != nil {
		err := s.judge(parent, &b, c.err)
		cancel()
		return c.resp, err
	}
	if s.l.cfg.Detach != nil && b.first {
		return s.l.cfg.Detach(c.resp, cancel), nil
	}
	cancel()
	return c.resp, nil
}

// run makes the inner call on its own goroutine and delivers the outcome to
// the caller, or to Late once the caller has abandoned the call. A panic is
// noticed without recovering on the normal path, as singleflight does: a
// flag set after the call returns tells the deferred function whether the
// call finished normally.
func (s *service[Req, Resp]) run(ctx context.Context, req Req, c *call[Resp]) {
	normal := false
	defer func() {
		if !normal {
			if r := recover(); r != nil {
				c.panicked = &rampart.PanicError{Value: r, Stack: debug.Stack()}
			} else {
				c.goexited = true // recover is nil only for runtime.Goexit
			}
		}
		if c.state.CompareAndSwap(running, returned) {
			close(c.done)
			return
		}
		// The caller has gone.
		if c.panicked != nil {
			panic(c.panicked)
		}
		if c.goexited {
			return // no result to hand to Late
		}
		if s.l.cfg.Late != nil {
			s.l.cfg.Late(c.resp, c.err)
		}
	}()
	c.resp, c.err = s.inner.Call(ctx, req)
	normal = true
}
