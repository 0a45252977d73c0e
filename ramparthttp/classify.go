package ramparthttp

import (
	"net/http"

	"github.com/rampart-go/rampart"
)

// Classify is the default judgement of an attempt for the breaker
// ([BreakerConfig.Classify] and [ClientConfig.Classify] when nil). It returns:
//   - [rampart.Failure] for a transport error, and for a 5xx status
//     except 501 (Not Implemented) and 505 (HTTP Version Not Supported): the
//     dependency is down or in trouble;
//   - [rampart.Ignored] for 429 (Too Many Requests): the server asks
//     this client to slow down, which is no evidence that it is down, so
//     the breaker counts it neither way (in HalfOpen it frees its probe
//     slot);
//   - [rampart.Success] for any other response (501 and 505 say the
//     request will never succeed, not that the server is in trouble), and
//     for a nil response with a nil error.
//
// The breaker layer calls a classifier only once the caller's own
// cancellation has been ruled out, so an error it sees came from the
// dependency. Wrap Classify to change part of the judgement:
//
//	classify := func(resp *http.Response, err error) rampart.Outcome {
//		if resp != nil && resp.StatusCode == http.StatusConflict {
//			return rampart.Ignored
//		}
//		return ramparthttp.Classify(resp, err)
//	}
//
// It is safe for concurrent use.
func Classify(resp *http.Response, err error) rampart.Outcome {
	switch {
	case err != nil:
		return rampart.Failure
	case resp == nil:
		return rampart.Success
	case resp.StatusCode == http.StatusTooManyRequests:
		return rampart.Ignored
	case serverFailure(resp.StatusCode):
		return rampart.Failure
	}
	return rampart.Success
}

// Retryable is the default judgement of an attempt for the retry layer
// ([RetryConfig.Retryable] when nil) and of what a hedge waits past
// ([HedgeLayer]): it reports true for a transport error, a 429 (Too Many
// Requests, retried after its Retry-After) and a 5xx status except 501 (Not
// Implemented) and 505 (HTTP Version Not Supported), which no retry can
// cure. Whatever it says, the retry layer never retries an open breaker,
// the caller's cancellation, or a request that may not be sent twice. It is
// safe for concurrent use.
func Retryable(resp *http.Response, err error) bool {
	if err != nil {
		return true
	}
	return resp != nil && (resp.StatusCode == http.StatusTooManyRequests || serverFailure(resp.StatusCode))
}

// serverFailure reports whether a status says the server is unhealthy: any
// 5xx except 501 Not Implemented and 505 HTTP Version Not Supported, which say
// the request will never succeed, not that the server is in trouble.
func serverFailure(code int) bool {
	return code >= 500 && code != http.StatusNotImplemented && code != http.StatusHTTPVersionNotSupported
}
