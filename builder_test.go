package rampart_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilcheck"
)

// appendLayer returns a layer that appends name to the request on the way in.
func appendLayer(name string) rampart.Layer[string, string] {
	return rampart.LayerFunc[string, string](func(inner rampart.Service[string, string]) rampart.Service[string, string] {
		return rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			return inner.Call(ctx, req+name)
		})
	})
}

var echo = rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
	return req, nil
})

func TestBuilder_FirstLayerIsOutermost(t *testing.T) {
	svc := rampart.NewBuilder[string, string]().
		Layer(appendLayer("a")).
		Layer(appendLayer("b")).
		Layer(appendLayer("c")).
		Service(echo)

	got, err := svc.Call(context.Background(), ">")
	require.NoError(t, err)
	assert.Equal(t, ">abc", got)
}

func TestBuilder_NoLayersReturnsServiceItself(t *testing.T) {
	var called int
	var s rampart.Service[string, string] = rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		called++
		return "", nil
	})
	got := rampart.NewBuilder[string, string]().Service(s)
	_, _ = got.Call(context.Background(), "")
	assert.Equal(t, 1, called)
	var zero rampart.Builder[string, string]
	_, _ = zero.Service(s).Call(context.Background(), "")
	assert.Equal(t, 2, called)
}

func TestBuilder_BranchesDoNotAlias(t *testing.T) {
	// Grow the parent so that its backing array has spare capacity, then
	// extend it in two directions: neither branch may see the other's layer.
	parent := rampart.NewBuilder[string, string]().Layer(appendLayer("p1")).Layer(appendLayer("p2")).Layer(appendLayer("p3"))
	left := parent.Layer(appendLayer("L"))
	right := parent.Layer(appendLayer("R"))

	l, err := left.Service(echo).Call(context.Background(), "")
	require.NoError(t, err)
	r, err := right.Service(echo).Call(context.Background(), "")
	require.NoError(t, err)
	p, err := parent.Service(echo).Call(context.Background(), "")
	require.NoError(t, err)

	assert.Equal(t, "p1p2p3L", l)
	assert.Equal(t, "p1p2p3R", r)
	assert.Equal(t, "p1p2p3", p)
}

func TestBuilder_NilLayerSkipped(t *testing.T) {
	svc := rampart.NewBuilder[string, string]().Layer(nil).Layer(appendLayer("x")).Service(echo)
	got, err := svc.Call(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, "x", got)
}

func TestBuilder_WrapsOnceNotPerCall(t *testing.T) {
	var wraps int
	counting := rampart.LayerFunc[string, string](func(inner rampart.Service[string, string]) rampart.Service[string, string] {
		wraps++
		return inner
	})
	svc := rampart.NewBuilder[string, string]().Layer(counting).Service(echo)
	for range 3 {
		_, _ = svc.Call(context.Background(), "")
	}
	assert.Equal(t, 1, wraps)
}

func TestServiceFunc_PassesErrorThrough(t *testing.T) {
	want := errors.New("boom")
	svc := rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req * 2, want })
	got, err := svc.Call(context.Background(), 21)
	assert.Equal(t, 42, got)
	assert.Same(t, want, err)
}

func TestBuilder_CallDoesNotAllocate(t *testing.T) {
	svc := rampart.NewBuilder[string, string]().Layer(appendLayer("")).Service(echo)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, "") })
	assert.Equal(t, 0.0, allocs)
}

// fieldError stands for a constructor's error naming a bad field.
type fieldError struct{ field string }

func (e *fieldError) Error() string { return "pkg: " + e.field + " must be > 0" }

// construct stands for a layer constructor: it returns a layer, or an error.
func construct(name string, err error) (rampart.Layer[string, string], error) {
	if err != nil {
		return nil, err
	}
	return appendLayer(name), nil
}

func TestBuilder_With_AddsLayersInOrder(t *testing.T) {
	svc, err := rampart.NewBuilder[string, string]().
		With(construct("a", nil)).
		Layer(appendLayer("b")).
		With(construct("c", nil)).
		Build(echo)
	require.NoError(t, err)
	got, err := svc.Call(t.Context(), ">")
	require.NoError(t, err)
	assert.Equal(t, ">abc", got)
}

// The first constructor error is kept, names the layer by position, and
// matches the original with errors.Is and errors.As; later errors are
// dropped and no layer is wrapped.
func TestBuilder_Build_ReturnsFirstConstructionError(t *testing.T) {
	first := &fieldError{field: "MaxAttempts"}
	var wraps atomic.Int32
	counting := rampart.LayerFunc[string, string](func(inner rampart.Service[string, string]) rampart.Service[string, string] {
		wraps.Add(1)
		return inner
	})
	svc, err := rampart.NewBuilder[string, string]().
		Layer(counting).
		Layer(nil).
		With(construct("", first)).
		With(construct("", errors.New("second"))).
		Build(echo)
	assert.Nil(t, svc)
	require.Error(t, err)
	assert.EqualError(t, err, "rampart: layer 2: pkg: MaxAttempts must be > 0")
	assert.ErrorIs(t, err, first)
	var fe *fieldError
	require.ErrorAs(t, err, &fe)
	assert.Same(t, first, fe)
	assert.Zero(t, wraps.Load(), "no layer is wrapped when construction failed")
}

// Service on a builder that holds an error never panics and never loses
// the error: every call fails with it.
func TestBuilder_Service_HoldingErrorFailsEveryCall(t *testing.T) {
	first := &fieldError{field: "Timeout"}
	svc := rampart.NewBuilder[string, string]().
		Layer(appendLayer("a")).
		With(construct("", first)).
		Service(echo)
	require.NotNil(t, svc)
	for range 2 {
		resp, err := svc.Call(t.Context(), "x")
		assert.Zero(t, resp)
		assert.EqualError(t, err, "rampart: layer 1: pkg: Timeout must be > 0")
		assert.ErrorIs(t, err, first)
		assert.NotErrorIs(t, err, rampart.ErrNilService)
	}
}

// A nil layer with a nil error is skipped, as Layer(nil) is, but still
// counts as a position, so positions match the calls in the source.
func TestBuilder_With_NilLayerSkippedButCounted(t *testing.T) {
	svc, err := rampart.NewBuilder[string, string]().
		With(nil, nil).
		With(construct("x", nil)).
		Build(echo)
	require.NoError(t, err)
	got, err := svc.Call(t.Context(), "")
	require.NoError(t, err)
	assert.Equal(t, "x", got)

	_, err = rampart.NewBuilder[string, string]().With(nil, nil).Layer(nil).With(construct("", &fieldError{field: "F"})).Build(echo)
	assert.EqualError(t, err, "rampart: layer 2: pkg: F must be > 0")
}

// Build reports a nil service (a nil ServiceFunc too, whose calls would
// fail) and a layer that returned one as errors
// matching rampart.ErrNilService, where Service returns a failing service.
func TestBuilder_Build_NilServiceIsAnError(t *testing.T) {
	svc, err := rampart.NewBuilder[string, string]().Layer(appendLayer("a")).Build(nil)
	assert.Nil(t, svc)
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "rampart: Builder.Build given a nil service: rampart: nil service")

	svc, err = rampart.NewBuilder[string, string]().Layer(appendLayer("a")).Build(rampart.ServiceFunc[string, string](nil))
	assert.Nil(t, svc)
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "rampart: Builder.Build given a nil service: rampart: nil service")

	svc, err = rampart.NewBuilder[string, string]().Build(rampart.ServiceFunc[string, string](nil))
	assert.Nil(t, svc)
	assert.ErrorIs(t, err, rampart.ErrNilService)

	returnsNilFunc := rampart.LayerFunc[string, string](func(rampart.Service[string, string]) rampart.Service[string, string] {
		return rampart.ServiceFunc[string, string](nil)
	})
	svc, err = rampart.NewBuilder[string, string]().Layer(returnsNilFunc).Layer(appendLayer("a")).Build(echo)
	assert.Nil(t, svc)
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "rampart: Builder.Build: layer 0 (rampart.LayerFunc[string,string]) returned a nil service: rampart: nil service")

	svc, err = rampart.NewBuilder[string, string]().Layer(appendLayer("a")).Layer(nilLayer{}).Build(echo)
	assert.Nil(t, svc)
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "rampart: Builder.Build: layer 1 (rampart_test.nilLayer) returned a nil service: rampart: nil service")
}

// Branches of a builder that holds no error stay independent when one of
// them records an error.
func TestBuilder_With_ErrorDoesNotLeakToSiblings(t *testing.T) {
	parent := rampart.NewBuilder[string, string]().Layer(appendLayer("p"))
	bad := parent.With(construct("", errors.New("bad")))
	good := parent.Layer(appendLayer("g"))
	_, err := bad.Build(echo)
	assert.Error(t, err)
	svc, err := good.Build(echo)
	require.NoError(t, err)
	got, err := svc.Call(t.Context(), "")
	require.NoError(t, err)
	assert.Equal(t, "pg", got)
}

type nilLayer struct{}

func (nilLayer) Wrap(rampart.Service[string, string]) rampart.Service[string, string] { return nil }

// A nil service or a layer that returns nil makes the Builder return a
// service failing every call with an error naming it; nothing panics.
func TestBuilder_NilServicesFail(t *testing.T) {
	returnsNil := rampart.LayerFunc[string, string](func(rampart.Service[string, string]) rampart.Service[string, string] { return nil })
	built := func(b rampart.Builder[string, string], s rampart.Service[string, string]) func() (rampart.Service[string, string], error) {
		return func() (rampart.Service[string, string], error) { return b.Service(s), nil }
	}
	b := rampart.NewBuilder[string, string]()
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name:       "nil service, no layers",
			Build:      built(b, nil),
			Want:       "rampart: Builder.Service given a nil service: rampart: nil service",
			NilService: true,
		},
		{
			Name:       "nil service under layers",
			Build:      built(b.Layer(appendLayer("a")), nil),
			Want:       "rampart: Builder.Service given a nil service: rampart: nil service",
			NilService: true,
		},
		{
			Name:       "LayerFunc returns nil",
			Build:      built(b.Layer(appendLayer("a")).Layer(returnsNil).Layer(appendLayer("b")), echo),
			Want:       "rampart: Builder.Service: layer 1 (rampart.LayerFunc[string,string]) returned a nil service: rampart: nil service",
			NilService: true,
		},
		{
			Name:       "Layer returns nil",
			Build:      built(b.Layer(nilLayer{}), echo),
			Want:       "rampart: Builder.Service: layer 0 (rampart_test.nilLayer) returned a nil service: rampart: nil service",
			NilService: true,
		},
		{
			Name: "nil LayerFunc wraps",
			Build: func() (rampart.Service[string, string], error) {
				return rampart.LayerFunc[string, string](nil).Wrap(echo), nil
			},
			Want:       "rampart: nil LayerFunc: rampart: nil service",
			NilService: true,
		},
	})
}

// A nil LayerFunc is a nil layer: the Builder skips it.
func TestBuilder_NilLayerFuncSkipped(t *testing.T) {
	svc := rampart.NewBuilder[string, string]().Layer(rampart.LayerFunc[string, string](nil)).Layer(appendLayer("x")).Service(echo)
	got, err := svc.Call(t.Context(), "")
	require.NoError(t, err)
	assert.Equal(t, "x", got)
}
