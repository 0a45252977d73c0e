package rampart

import "fmt"

// Builder collects layers and wraps a [Service] with them, like Tower's
// ServiceBuilder.
//
// # Order
//
// The first layer added is the outermost:
//
//	NewBuilder[Req, Resp]().Layer(a).Layer(b).Service(s)
//
// returns a service whose Call runs a, which calls b, which calls s; the
// response travels back through b, then a. A Builder with no layers returns
// the service itself.
//
// A Builder is an immutable value: [Builder.Layer] returns a new Builder and
// never changes or aliases the receiver's layers, so a partly built Builder
// can be shared and extended in several directions. The zero value is an
// empty Builder ready to use. A Builder is safe for concurrent use.
type Builder[Req, Resp any] struct {
	layers []Layer[Req, Resp]
}

// NewBuilder returns an empty [Builder]. It is the same as the zero value,
// and exists so that the type arguments can be given once.
func NewBuilder[Req, Resp any]() Builder[Req, Resp] {
	return Builder[Req, Resp]{}
}

// Layer returns a new Builder with l added inside every layer added before
// it. A nil l, or a nil [LayerFunc], is skipped, so optional layers can be
// added unconditionally.
func (b Builder[Req, Resp]) Layer(l Layer[Req, Resp]) Builder[Req, Resp] {
	if f, ok := l.(LayerFunc[Req, Resp]); l == nil || ok && f == nil {
		return b
	}
	// The full slice expression caps the capacity so append always copies:
	// two Builders extended from the same parent never share a backing array.
	return Builder[Req, Resp]{layers: append(b.layers[:len(b.layers):len(b.layers)], l)}
}

// Service wraps s with the builder's layers, innermost last, and returns the
// stack. The layers' Wrap methods run here, once; calling the returned
// service composes nothing. With no layers, Service returns s itself.
//
// Service never returns nil. When s is nil, or a layer's Wrap returns nil,
// the stack cannot work: Service returns, in place of the whole stack, a
// [Failing] service whose every call fails with an error matching
// [ErrNilService] that says which it was (the layer by its index, 0 for
// the first added, and its type). The layers outside a nil one are not
// wrapped, and no layer is given a nil s.
func (b Builder[Req, Resp]) Service(s Service[Req, Resp]) Service[Req, Resp] {
	if s == nil {
		return Failing[Req, Resp]("rampart: Builder.Service given a nil service")
	}
	for i := len(b.layers) - 1; i >= 0; i-- {
		if s = b.layers[i].Wrap(s); s == nil {
			return Failing[Req, Resp](fmt.Sprintf("rampart: Builder.Service: layer %d (%T) returned a nil service", i, b.layers[i]))
		}
	}
	return s
}
