package rampart

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
// it. A nil l is skipped, so optional layers can be added unconditionally.
func (b Builder[Req, Resp]) Layer(l Layer[Req, Resp]) Builder[Req, Resp] {
	if l == nil {
		return b
	}
	// The full slice expression caps the capacity so append always copies:
	// two Builders extended from the same parent never share a backing array.
	return Builder[Req, Resp]{layers: append(b.layers[:len(b.layers):len(b.layers)], l)}
}

// Service wraps s with the builder's layers, innermost last, and returns the
// stack. The layers' Wrap methods run here, once; calling the returned
// service composes nothing. With no layers, Service returns s itself.
func (b Builder[Req, Resp]) Service(s Service[Req, Resp]) Service[Req, Resp] {
	for i := len(b.layers) - 1; i >= 0; i-- {
		s = b.layers[i].Wrap(s)
	}
	return s
}
