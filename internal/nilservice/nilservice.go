// Package nilservice tells whether a layer was given no inner service: a
// nil Service, or a nil rampart.ServiceFunc inside one, whose every call
// would fail. Layers check it once, in Wrap, and then return
// rampart.Failing in place of their service, so a stack wired to nothing
// fails every call with an error matching rampart.ErrNilService and no
// layer counts those calls (a breaker does not trip on its own wiring).
package nilservice

import "github.com/rampart-go/rampart"

// Is reports whether s is nil or holds a nil [rampart.ServiceFunc].
func Is[Req, Resp any](s rampart.Service[Req, Resp]) bool {
	if s == nil {
		return true
	}
	f, ok := s.(rampart.ServiceFunc[Req, Resp])
	return ok && f == nil
}
