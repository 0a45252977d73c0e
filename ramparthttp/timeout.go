package ramparthttp

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/rampart-go/rampart/timeout"
)

// TimeoutLayer returns a layer that gives each request a deadline d after it
// is sent. The deadline covers reading the response body too, as
// [http.Client.Timeout] does: the layer does not cancel the request's
// context when the response arrives, but when its body is closed (or at the
// deadline), so a caller can read a successful response to the end. A
// request that runs out of time fails with an error matching both
// [timeout.ErrTimeout] and [context.DeadlineExceeded]; the caller's own
// deadline or cancellation is reported as the caller's. d must be > 0,
// otherwise TimeoutLayer returns an error naming it.
func TimeoutLayer(d time.Duration) (Layer, error) {
	return timeout.NewConfigLayer(timeout.Config[*http.Request, *http.Response]{Timeout: d, Detach: cancelOnClose})
}

// cancelOnClose hands a response's context to its body: cancel runs when
// the body is closed.
func cancelOnClose(resp *http.Response, cancel context.CancelFunc) *http.Response {
	if resp.Body == nil {
		cancel()
		return resp
	}
	if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
		// A 101 Switching Protocols body is writable; keep it so.
		resp.Body = &cancelReadWriteCloser{cancelBody{rwc, cancel}, rwc}
		return resp
	}
	resp.Body = &cancelBody{resp.Body, cancel}
	return resp
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

type cancelReadWriteCloser struct {
	cancelBody
	w io.Writer
}

func (b *cancelReadWriteCloser) Write(p []byte) (int, error) { return b.w.Write(p) }
