package circuitbreaker

import (
	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/wrap"
)

// WrapClassified guards svc with b, classify judging each call: it is
// NewClassifiedLayer[Req, Resp](b, classify).Wrap(svc), with the type
// arguments inferred from svc. See [NewClassifiedLayer].
func WrapClassified[Req, Resp any](svc rampart.Service[Req, Resp], b *Breaker, classify Classifier[Resp]) rampart.Service[Req, Resp] {
	return NewClassifiedLayer[Req, Resp](b, classify).Wrap(svc)
}

// WrapGroup guards each call to svc with g's breaker for key(req): it is
// the layer of [NewGroupLayer] wrapped around svc, with the type arguments
// inferred from svc. It returns the errors NewGroupLayer returns, and an
// error matching [rampart.ErrNilService] when svc is nil.
func WrapGroup[Req, Resp any, K comparable](svc rampart.Service[Req, Resp], g *Group[K], key func(Req) K) (rampart.Service[Req, Resp], error) {
	l, err := NewGroupLayer[Req, Resp](g, key)
	return wrap.Service("circuitbreaker", svc, l, err)
}

// WrapClassifiedGroup is [WrapGroup] with classify judging each call, as
// in [NewClassifiedGroupLayer].
func WrapClassifiedGroup[Req, Resp any, K comparable](svc rampart.Service[Req, Resp], g *Group[K], key func(Req) K, classify Classifier[Resp]) (rampart.Service[Req, Resp], error) {
	l, err := NewClassifiedGroupLayer[Req, Resp](g, key, classify)
	return wrap.Service("circuitbreaker", svc, l, err)
}
