package ramparthttp

import (
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
// and each refusal is recorded, retries marked as such. An attempt is
// judged when its response headers arrive: a body that fails later, which
// the breaker layer counts as a failure, is recorded as the response was
// judged. A nil or zero r gives a layer whose every call fails with an
// error naming it; classify must be safe for concurrent use.
func RecordLayer(r *record.Recorder, classify circuitbreaker.Classifier[*http.Response]) Layer {
	if classify == nil {
		classify = Classify
	}
	return record.NewLayer(record.LayerConfig[*http.Request, *http.Response]{Recorder: r, Key: Host, Classify: classify})
}
