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
// # Errors
//
// Layer constructors that validate their configuration return a layer and
// an error. [Builder.With] takes both results at once, so a stack is built
// with its errors checked once, by [Builder.Build]:
//
//	svc, err := rampart.NewBuilder[Req, Resp]().
//		With(retry.NewLayer(retry.Config[Req, Resp]{Budget: new(budget.Budget)})).
//		Layer(circuitbreaker.NewLayer[Req, Resp](&br, nil)).
//		With(timeout.NewLayer(timeout.Config[Req, Resp]{Timeout: time.Second})).
//		Build(backend)
//
// The Builder keeps the first error and Build returns it, saying which
// layer it came from; the constructor's own error, which names the bad
// field, is kept intact for [errors.Is] and [errors.As].
//
// A Builder is an immutable value: [Builder.Layer] and [Builder.With]
// return a new Builder and never change or alias the receiver's layers, so
// a partly built Builder can be shared and extended in several directions.
// The zero value is an empty Builder ready to use. A Builder is safe for
// concurrent use.
type Builder[Req, Resp any] struct {
	// layers holds one entry per call of Layer or With, in order, nil for
	// a layer that is skipped, so that an index is the layer's position.
	layers []Layer[Req, Resp]
	// err is the first construction error given to With, already wrapped
	// with its position; once set, no more layers are kept.
	err error
}

// NewBuilder returns an empty [Builder]. It is the same as the zero value,
// and exists so that the type arguments can be given once.
func NewBuilder[Req, Resp any]() Builder[Req, Resp] {
	return Builder[Req, Resp]{}
}

// Layer returns a new Builder with l added inside every layer added before
// it. A nil l, or a nil [LayerFunc], is skipped, so optional layers can be
// added unconditionally; it still counts as a position in the errors that
// name a layer.
func (b Builder[Req, Resp]) Layer(l Layer[Req, Resp]) Builder[Req, Resp] {
	return b.With(l, nil)
}

// With returns a new Builder with l added inside every layer added before
// it, as [Builder.Layer] does, or, when err is not nil, a Builder that
// holds err. Its two parameters are the two results of a layer
// constructor, so With(retry.NewLayer(cfg)) passes them straight in.
//
// A Builder keeps only the first error it is given: [Builder.Build]
// returns it, and every call of a service made by [Builder.Service] fails
// with it. The error says the layer's position (0 for the first layer or
// With call, nil layers included) and wraps err, so [errors.Is] and
// [errors.As] find the constructor's own error, for example
// "rampart: layer 2: timeout: Timeout must be > 0, got 0s". When err is
// not nil, l is ignored.
func (b Builder[Req, Resp]) With(l Layer[Req, Resp], err error) Builder[Req, Resp] {
	if b.err != nil {
		return b
	}
	if err != nil {
		return Builder[Req, Resp]{layers: b.layers, err: fmt.Errorf("rampart: layer %d: %w", len(b.layers), err)}
	}
	if f, ok := l.(LayerFunc[Req, Resp]); ok && f == nil {
		l = nil
	}
	// The full slice expression caps the capacity so append always copies:
	// two Builders extended from the same parent never share a backing array.
	return Builder[Req, Resp]{layers: append(b.layers[:len(b.layers):len(b.layers)], l)}
}

// Build wraps s with the builder's layers, innermost last, and returns the
// stack. The layers' Wrap methods run here, once; calling the returned
// service composes nothing. With no layers, Build returns s itself.
//
// Build returns a nil service and an error when the stack cannot work:
// the first error given to [Builder.With] (see there), or an error
// matching [ErrNilService] when s is nil or a nil [ServiceFunc], or a
// layer's Wrap returned either (naming the layer by its position and type). No layer is wrapped when a
// constructor failed, none is given a nil s, and the layers outside one
// that returned nil are not wrapped.
func (b Builder[Req, Resp]) Build(s Service[Req, Resp]) (Service[Req, Resp], error) {
	return b.build(s, "Build")
}

// Service is [Builder.Build] for code that handles errors per call: in
// place of an error it returns a service whose every call fails with that
// error, so it never returns nil, never panics and never loses an error.
// Use Build to see the error when the stack is built.
func (b Builder[Req, Resp]) Service(s Service[Req, Resp]) Service[Req, Resp] {
	svc, err := b.build(s, "Service")
	if err != nil {
		return failWith[Req, Resp](err)
	}
	return svc
}

// build is Build; method names the exported method in errors.
func (b Builder[Req, Resp]) build(s Service[Req, Resp], method string) (Service[Req, Resp], error) {
	if b.err != nil {
		return nil, b.err
	}
	if isNil(s) {
		return nil, fmt.Errorf("rampart: Builder.%s given a nil service: %w", method, ErrNilService)
	}
	for i := len(b.layers) - 1; i >= 0; i-- {
		l := b.layers[i]
		if l == nil {
			continue
		}
		if s = l.Wrap(s); isNil(s) {
			return nil, fmt.Errorf("rampart: Builder.%s: layer %d (%T) returned a nil service: %w", method, i, l, ErrNilService)
		}
	}
	return s, nil
}

// isNil reports whether s is nil or a nil [ServiceFunc], whose every call
// fails.
func isNil[Req, Resp any](s Service[Req, Resp]) bool {
	f, ok := s.(ServiceFunc[Req, Resp])
	return s == nil || ok && f == nil
}
