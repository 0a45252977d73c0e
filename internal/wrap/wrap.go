// Package wrap holds the body shared by the Wrap(svc, …) functions of the
// layer packages.
package wrap

import (
	"fmt"

	"github.com/rampart-go/rampart"
)

// Service returns l.Wrap(svc) when err is nil and svc is not. It returns
// err when a layer constructor failed, and an error matching
// [rampart.ErrNilService] and starting with pkg when svc is nil:
// "pkg: svc must not be nil: rampart: nil service".
func Service[Req, Resp any](pkg string, svc rampart.Service[Req, Resp], l rampart.Layer[Req, Resp], err error) (rampart.Service[Req, Resp], error) {
	if err != nil {
		return nil, err
	}
	if svc == nil {
		return nil, fmt.Errorf("%s: svc must not be nil: %w", pkg, rampart.ErrNilService)
	}
	return l.Wrap(svc), nil
}
