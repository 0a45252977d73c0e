// Package wrap wraps a service with a layer in one expression, for tests:
// Go infers the type arguments of the layer constructor passed in from
// the service, so a test need not spell them out.
package wrap

import "github.com/rampart-go/rampart"

// Service returns newLayer(cfg).Wrap(svc), or newLayer's error.
func Service[Req, Resp, C any](svc rampart.Service[Req, Resp], newLayer func(C) (rampart.Layer[Req, Resp], error), cfg C) (rampart.Service[Req, Resp], error) {
	l, err := newLayer(cfg)
	if err != nil {
		return nil, err
	}
	return l.Wrap(svc), nil
}

// Service2 is [Service] for a constructor of two arguments.
func Service2[Req, Resp, A, B any](svc rampart.Service[Req, Resp], newLayer func(A, B) (rampart.Layer[Req, Resp], error), a A, b B) (rampart.Service[Req, Resp], error) {
	l, err := newLayer(a, b)
	if err != nil {
		return nil, err
	}
	return l.Wrap(svc), nil
}

// Service3 is [Service] for a constructor of three arguments.
func Service3[Req, Resp, A, B, C any](svc rampart.Service[Req, Resp], newLayer func(A, B, C) (rampart.Layer[Req, Resp], error), a A, b B, c C) (rampart.Service[Req, Resp], error) {
	l, err := newLayer(a, b, c)
	if err != nil {
		return nil, err
	}
	return l.Wrap(svc), nil
}

// Layer returns newLayer(a, b).Wrap(svc), for a constructor that cannot
// fail.
func Layer[Req, Resp, A, B any](svc rampart.Service[Req, Resp], newLayer func(A, B) rampart.Layer[Req, Resp], a A, b B) rampart.Service[Req, Resp] {
	return newLayer(a, b).Wrap(svc)
}
