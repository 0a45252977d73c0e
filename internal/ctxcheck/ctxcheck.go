// Package ctxcheck lets a layer that has just found its context not done
// call the service below without that service checking the same context
// again: a check is an interface call (some 20 instructions on a timer
// context), and a retry layer over a circuit breaker made two in a row
// on every call.
package ctxcheck

import "github.com/rampart-go/rampart"

// Skipper is implemented by a service whose every call begins by
// returning the context's error, doing nothing else, when the context is
// done. Unchecked returns a service that does all the same except that
// first check. Skipping it changes no outcome for a caller that calls the
// unchecked service only right after finding ctx.Err() nil itself, with
// nothing between that waits: a context done in between is one done just
// after the check, which the checked service cannot tell apart either.
type Skipper[Req, Resp any] interface {
	Unchecked() rampart.Service[Req, Resp]
}

// Unchecked returns svc's unchecked service when svc is a [Skipper], and
// svc itself otherwise.
func Unchecked[Req, Resp any](svc rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
	if s, ok := svc.(Skipper[Req, Resp]); ok {
		return s.Unchecked()
	}
	return svc
}
