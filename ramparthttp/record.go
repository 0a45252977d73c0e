package ramparthttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/record"
)

// RecordLayer returns a layer that records each attempt with r for
// package sim to replay, judging each response as the breaker layers do,
// with classify (nil means [Classify]): a 503 is recorded as a failure, a
// 429 as ignored, a request the breaker refused as refused. The entry's key
// is the request's host ([Host]). Put it between the retry layer and the
// breaker (as [NewTransport] does with [ClientConfig.Recorder]), so each attempt
// and each refusal is recorded, retries marked as such. A response
// judged a success is judged again by its body, as the breaker layer
// judges it, and recorded once the body is read to its end or closed (a
// success, lasting until its headers arrived), or once a read of it fails
// (a failure, lasting until then: a server that cuts its body is an
// outage in the trace too); a body that is never closed is never
// recorded, as the breaker never counts it. This costs two allocations
// per response with a body, one per response without. A nil or zero r gives a layer whose every call fails
// with an error naming it; classify must be safe for concurrent use.
func RecordLayer(r *record.Recorder, classify circuitbreaker.Classifier[*http.Response]) Layer {
	if classify == nil {
		classify = Classify
	}
	return record.NewLayer(record.LayerConfig[*http.Request, *http.Response]{Recorder: r, Key: Host, Classify: classify, Later: judgeLater})
}

// judgeLater is the Later of the recorder and the shadow layer over HTTP:
// a response judged a success is judged again by its body, as the
// breaker layer judges it. A body read to its end or closed is done with
// the success; a read that fails, with its error. A response without a
// body to read (none, [http.NoBody], a 101 Switching Protocols) is
// settled at once.
func judgeLater(_ context.Context, resp *http.Response, done func(err error)) bool {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		return false
	}
	resp.Body = &laterBody{ReadCloser: resp.Body, done: done}
	return true
}

// laterBody calls done once, when its body is read to its end, fails or
// is closed.
type laterBody struct {
	io.ReadCloser
	done     func(error)
	finished atomic.Bool
}

func (b *laterBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.finish(err)
	}
	return n, err
}

func (b *laterBody) Close() error {
	// Judged before closing, so a Read that fails because of this Close
	// cannot count as the server's failure.
	b.finish(nil)
	return b.ReadCloser.Close()
}

func (b *laterBody) finish(err error) {
	if !b.finished.CompareAndSwap(false, true) {
		return
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	b.done(err)
}
