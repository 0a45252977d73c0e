package ramparthttp

import (
	"net/http"
	"strconv"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// StatusError is the failure a breaker layer records for a response judged
// a failure: the cause of the trip it brings about, so that the breaker's
// state and its trip event name the status ("ramparthttp: response judged
// a failure: 503 Service Unavailable"). It matches
// [circuitbreaker.ErrBadResponse]. The caller still gets the response
// itself, not this error.
type StatusError struct {
	// StatusCode is the response's status code, such as 503.
	StatusCode int
}

// Error names the status code and its text.
func (e *StatusError) Error() string {
	return "ramparthttp: response judged a failure: " + strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
}

// Unwrap returns [circuitbreaker.ErrBadResponse].
func (e *StatusError) Unwrap() error { return circuitbreaker.ErrBadResponse }

// statusErrors are the StatusErrors of the codes 500 to 599, built once so
// that a failing response of a server in trouble allocates none.
var statusErrors = func() (s [100]*StatusError) {
	for i := range s {
		s[i] = &StatusError{StatusCode: 500 + i}
	}
	return s
}()

// statusError returns the StatusError for resp's status, or
// [circuitbreaker.ErrBadResponse] for a nil resp.
func statusError(resp *http.Response) error {
	switch {
	case resp == nil:
		return circuitbreaker.ErrBadResponse
	case resp.StatusCode >= 500 && resp.StatusCode < 600:
		return statusErrors[resp.StatusCode-500]
	}
	return &StatusError{StatusCode: resp.StatusCode}
}
