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

// body is the wrapper that the breaker and the timeout layers put in front
// of a response body, to finish the attempt's permit when the body is read
// to its end, fails or is closed (judging), and to end the attempt's
// context when it is closed (cancel). One body does both: the second layer
// to need a wrapper fills its part of the first one's instead of wrapping
// it again, so that a response through a breaker and an attempt timeout
// costs one allocation, not two. Each part is filled at most once; a layer
// that finds its part taken (two breakers in one stack) wraps the body
// again.
type body struct {
	io.ReadCloser

	// The breaker's part, set by judge.
	judging bool
	ctx     context.Context // the call's context, to tell the caller's cancellation apart
	p       circuitbreaker.Permit
	done    atomic.Bool // the permit is finished; Read, Close and the lease may race
	lease   *time.Timer // a probe's body lease, or nil

	// The timeout layer's part: called once the body is closed.
	cancel context.CancelFunc
}

// readWriteBody is a body whose inner body is writable (the body of a 101
// Switching Protocols response), and stays so.
type readWriteBody struct {
	body
	w io.Writer
}

func (b *readWriteBody) Write(p []byte) (int, error) { return b.w.Write(p) }

// judgeBody finishes p as a success for a response without a body to read,
// and otherwise moves p into the wrapper of resp's body, which finishes it
// when the body is read to its end, fails or is closed; a probe's body
// holds its slot for lease at most.
func judgeBody(ctx context.Context, p *circuitbreaker.Permit, resp *http.Response, lease time.Duration) {
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		p.Success()
		return
	}
	b, ok := resp.Body.(*body)
	if !ok || b.judging {
		b = &body{ReadCloser: resp.Body}
		resp.Body = b
	}
	b.judging, b.ctx = true, ctx
	probe := p.Probe()
	b.p = p.Move()
	if probe {
		b.lease = time.AfterFunc(lease, func() { b.finish(nil) })
	}
}

// cancelOnClose hands a response's context to its body: cancel runs when
// the body is closed (at once when there is no body).
func cancelOnClose(resp *http.Response, cancel context.CancelFunc) *http.Response {
	switch rc := resp.Body.(type) {
	case nil:
		cancel()
	case *body:
		if rc.cancel == nil {
			rc.cancel = cancel
			break
		}
		resp.Body = &body{ReadCloser: rc, cancel: cancel}
	case io.ReadWriteCloser:
		// A 101 Switching Protocols body is writable; keep it so.
		resp.Body = &readWriteBody{body{ReadCloser: rc, cancel: cancel}, rc}
	default:
		resp.Body = &body{ReadCloser: rc, cancel: cancel}
	}
	return resp
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.judging {
		b.judge(err)
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
	err := b.ReadCloser.Close()
	if b.cancel != nil {
		b.cancel()
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
