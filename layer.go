package rampart

// Layer wraps a [Service] in another Service that adds one behaviour, as
// Tower's Layer does.
//
// Wrap is called once per stack, when the stack is built, never per request.
// It must not store the inner service in the Layer value itself, so one
// Layer can wrap many services; state that the layer shares across services
// (a circuit breaker, a retry budget) is passed to its constructor
// explicitly. Wrap must be safe to call from multiple goroutines, and must
// not return nil: given a nil inner service, rampart's layers return a
// [Failing] service instead, and a [Builder] replaces a stack in which a
// layer returned nil by one.
type Layer[Req, Resp any] interface {
	Wrap(inner Service[Req, Resp]) Service[Req, Resp]
}

// LayerFunc adapts an ordinary function to a [Layer].
type LayerFunc[Req, Resp any] func(inner Service[Req, Resp]) Service[Req, Resp]

// Wrap calls f(inner). A nil f returns a [Failing] service, whose every
// call fails with an error matching [ErrNilService].
func (f LayerFunc[Req, Resp]) Wrap(inner Service[Req, Resp]) Service[Req, Resp] {
	if f == nil {
		return Failing[Req, Resp]("rampart: nil LayerFunc")
	}
	return f(inner)
}
