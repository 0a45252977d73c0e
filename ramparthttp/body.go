package ramparthttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// body is the wrapper that the breaker, the timeout, the recorder and the
// shadow layers put in front of a response body, to finish the attempt's
// permit when the body is read to its end, fails or is closed (judging),
// to tell the recorder and the shadow the same (later), and to end the
// attempt's contexts when it is closed (cancel, cancelCause). One body
// does all of it: a layer that needs a wrapper fills its part of the one
// already there instead of wrapping the body again, so that a response
// through a breaker, timeouts, a recorder and a shadow costs one
// allocation, not one per layer, and an attempt sent with a context of
// its own has its wrapper in the same allocation as the request's copy
// (see [attempt]). Each part is filled at most once; a layer that finds
// its part taken (two breakers in one stack) wraps the body again.
type body struct {
	io.ReadCloser

	// The breaker's part, set by judge.
	judging bool
	ctx     context.Context // the call's context, to tell the caller's cancellation apart
	p       circuitbreaker.Permit
	done    atomic.Bool // the permit is finished; Read, Close and the lease may race
	lease   *time.Timer // a probe's body lease, or nil

	// The recorder's and the shadow's parts, set by judgeLater: called
	// once (ended), in the order set, when the body is read to its end,
	// fails or is closed.
	later [2]func(error)
	ended atomic.Bool

	// NewTransport's attempt timeout's part, with an Observer (set by
	// attemptTimeout.detach): told of the read its deadline ended, once
	// (ended), with the attempt's context.
	timeout    *attemptTimeout
	timeoutCtx context.Context

	// The timeout and hedge layers' parts: called once the body is closed.
	cancel      [2]context.CancelFunc
	cancelCause context.CancelCauseFunc
}

// readWriteBody is a body whose inner body is writable (the body of a 101
// Switching Protocols response, as a WebSocket or h2c upgrade uses it),
// and stays so.
type readWriteBody struct {
	body
	w io.Writer
}

func (b *readWriteBody) Write(p []byte) (int, error) { return b.w.Write(p) }

// attempt is what an attempt sent with a context of its own allocates
// (see roundTripperService): the request's copy that carries the context,
// and the wrapper of the response body, which a timeout layer's context
// needs anyway.
type attempt struct {
	req  http.Request
	body readWriteBody
}

// wrapIn puts b in front of resp's body, keeping a writable body writable,
// and returns the part of b that the layers fill. resp has a body.
func wrapIn(b *readWriteBody, resp *http.Response) *body {
	b.ReadCloser = resp.Body
	if rw, ok := resp.Body.(io.ReadWriteCloser); ok {
		b.w = rw
		resp.Body = b
	} else {
		resp.Body = &b.body
	}
	return &b.body
}

// wrapper returns the wrapper in front of resp's body, or nil if there is
// none.
func wrapper(resp *http.Response) *body {
	switch b := resp.Body.(type) {
	case *body:
		return b
	case *readWriteBody:
		return &b.body
	}
	return nil
}

// unwrapIdle takes away a wrapper that no layer filled (one the innermost
// service put there in case a layer would need it).
func unwrapIdle(resp *http.Response) {
	if b := wrapper(resp); b != nil && b.idle() {
		resp.Body = b.ReadCloser
	}
}

// idle reports whether no layer filled a part of b.
func (b *body) idle() bool {
	return !b.judging && b.later[0] == nil && b.cancel[0] == nil && b.cancelCause == nil
}

// noBody reports whether resp has no body to read: nothing will be read
// through its context, and there is no read or close to judge.
func noBody(resp *http.Response) bool {
	return resp.Body == nil || resp.Body == http.NoBody
}

// judgeBody finishes p as a success for a response without a body to read,
// and otherwise moves p into the wrapper of resp's body, which finishes it
// when the body is read to its end, fails or is closed; a probe's body
// holds its slot for lease at most.
func judgeBody(ctx context.Context, p *circuitbreaker.Permit, resp *http.Response, lease time.Duration) {
	if noBody(resp) || resp.StatusCode == http.StatusSwitchingProtocols {
		p.Success()
		return
	}
	b := wrapper(resp)
	if b == nil || b.judging {
		b = wrapIn(new(readWriteBody), resp)
	}
	b.judging, b.ctx = true, ctx
	probe := p.Probe()
	b.p = p.Move()
	if probe {
		b.lease = time.AfterFunc(lease, func() { b.finish(nil) })
	}
}

// cancelOnClose hands a response's context to its body: cancel runs when
// the body is closed, or at once when there is no body to read.
func cancelOnClose(resp *http.Response, cancel context.CancelFunc) *http.Response {
	if noBody(resp) {
		cancel()
		return resp
	}
	b := wrapper(resp)
	if b == nil || b.cancel[len(b.cancel)-1] != nil {
		b = wrapIn(new(readWriteBody), resp)
	}
	if b.cancel[0] == nil {
		b.cancel[0] = cancel
	} else {
		b.cancel[1] = cancel
	}
	return resp
}

// cancelCauseOnClose is cancelOnClose for a context made by
// [context.WithCancelCause]: cancel(nil) runs when the body is closed.
func cancelCauseOnClose(resp *http.Response, cancel context.CancelCauseFunc) *http.Response {
	if noBody(resp) {
		cancel(nil)
		return resp
	}
	b := wrapper(resp)
	if b == nil || b.cancelCause != nil {
		b = wrapIn(new(readWriteBody), resp)
	}
	b.cancelCause = cancel
	return resp
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		if b.judging {
			b.judge(err)
		}
		if b.later[0] != nil || b.timeout != nil {
			b.end(err)
		}
	}
	return n, err
}

func (b *body) Close() error {
	if b.judging {
		// Closed early or after its end: the server did its part. Judged
		// before closing, so a Read that fails because of this Close
		// cannot count as the server's failure.
		b.judge(nil)
	}
	if b.later[0] != nil || b.timeout != nil {
		b.end(nil)
	}
	err := b.ReadCloser.Close()
	for _, cancel := range b.cancel {
		if cancel != nil {
			cancel()
		}
	}
	if b.cancelCause != nil {
		b.cancelCause(nil)
	}
	return err
}

// judge finishes the permit from the caller's Read or Close, and stops
// the lease.
func (b *body) judge(err error) {
	if b.lease != nil {
		b.lease.Stop()
	}
	b.finish(err)
}

// finish finishes the permit once, whoever comes first.
func (b *body) finish(err error) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	b.p.DoneContext(b.ctx, err)
}

// end tells the later and the timeout parts once, whoever comes first,
// how the body ended: nil for a body read to its end or closed.
func (b *body) end(err error) {
	if !b.ended.CompareAndSwap(false, true) {
		return
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if b.timeout != nil && err != nil {
		b.timeout.ended(b.timeoutCtx, err)
	}
	for _, done := range b.later {
		if done != nil {
			done(err)
		}
	}
}
