package ramparthttp

import (
	"context"
	"net/http"

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
// recorded, as the breaker never counts it. This costs one allocation
// per response (the function that records it), and one more for a
// response with a body that no layer below wrapped already (a breaker or
// a timeout does, and the recorder shares its wrapper). A nil or zero r
// gives a layer whose every call fails with an error naming it; classify
// must be safe for concurrent use.
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
// settled at once. done is a part of the one wrapper of the body (see
// [body]), so a writable body stays writable.
func judgeLater(_ context.Context, resp *http.Response, done func(err error)) bool {
	if resp == nil || noBody(resp) || resp.StatusCode == http.StatusSwitchingProtocols {
		return false
	}
	b := wrapper(resp)
	if b == nil || b.later[len(b.later)-1] != nil {
		b = wrapIn(new(readWriteBody), resp)
	}
	if b.later[0] == nil {
		b.later[0] = done
	} else {
		b.later[1] = done
	}
	return true
}
