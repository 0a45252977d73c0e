package ramparthttp

import (
	"net/http"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// BreakerLayer returns a layer that guards requests with b, counting a
// transport error or a failing status (429, or 5xx but 501 and 505) as a
// failure (CB8). The caller's cancellation is ignored; a deadline is a
// failure; [circuitbreaker.Config.IsFailure] may overrule the failure of an
// error (not of a status). A rejected request is
// not sent, and fails with an [*circuitbreaker.OpenError] that matches
// [circuitbreaker.ErrOpen]. Responses, failures included, are returned
// unchanged. Layers from the same b share its state.
func BreakerLayer(b *circuitbreaker.Breaker) Layer {
	return circuitbreaker.NewClassifiedLayer[*http.Request, *http.Response](b, classify)
}

// classify is called only for calls the caller did not cancel (the layer
// ignores those first), so every error, a dependency's context.Canceled
// included, is a failure.
func classify(resp *http.Response, err error) circuitbreaker.Outcome {
	if err != nil {
		return circuitbreaker.Failure
	}
	if isFailure(resp) {
		return circuitbreaker.Failure
	}
	return circuitbreaker.Success
}
