package circuitbreaker

import (
	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/wrap"
)

// WrapClassified is NewClassifiedLayer[Req, Resp](b, classify).Wrap(svc),
// with inferred types.
func WrapClassified[Req, Resp any](svc rampart.Service[Req, Resp], b *Breaker, classify Classifier[Resp]) rampart.Service[Req, Resp] {
	return NewClassifiedLayer[Req, Resp](b, classify).Wrap(svc)
}

// WrapGroup wraps svc in the layer of [NewGroupLayer], with inferred
// types; a nil svc is an error matching [rampart.ErrNilService].
func WrapGroup[Req, Resp any, K comparable](svc rampart.Service[Req, Resp], g *Group[K], key func(Req) K) (rampart.Service[Req, Resp], error) {
	l, err := NewGroupLayer[Req, Resp](g, key)
	return wrap.Service("circuitbreaker", svc, l, err)
}

// WrapClassifiedGroup is [WrapGroup] with classify judging each call.
func WrapClassifiedGroup[Req, Resp any, K comparable](svc rampart.Service[Req, Resp], g *Group[K], key func(Req) K, classify Classifier[Resp]) (rampart.Service[Req, Resp], error) {
	l, err := NewClassifiedGroupLayer[Req, Resp](g, key, classify)
	return wrap.Service("circuitbreaker", svc, l, err)
}
