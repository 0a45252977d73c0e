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
// itself, not this error. A StatusError is immutable: the ones of 5xx
// codes are shared by every failing response with that code (so that a
// server in trouble costs no allocation per response), and its code is
// read with [StatusError.StatusCode]. Its methods accept a nil
// *StatusError: StatusCode is 0, Error "<nil>" (as for a nil
// [*net.OpError]), and Unwrap still [circuitbreaker.ErrBadResponse].
type StatusError struct {
	code int
}

// StatusCode returns the response's status code, such as 503.
func (e *StatusError) StatusCode() int {
	if e == nil {
		return 0
	}
	return e.code
}

// Error names the status code and its text.
func (e *StatusError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return "ramparthttp: response judged a failure: " + strconv.Itoa(e.code) + " " + http.StatusText(e.code)
}

// Unwrap returns [circuitbreaker.ErrBadResponse].
func (e *StatusError) Unwrap() error { return circuitbreaker.ErrBadResponse }

// statusErrors are the StatusErrors of the codes 500 to 599, built once so
// that a failing response of a server in trouble allocates none.
var statusErrors = func() (s [100]*StatusError) {
	for i := range s {
		s[i] = &StatusError{code: 500 + i}
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
	return &StatusError{code: resp.StatusCode}
}
