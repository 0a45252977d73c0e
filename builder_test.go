package rampart_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
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
