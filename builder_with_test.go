package rampart_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
)

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

// Build reports a nil service and a layer that returned nil as errors
// matching rampart.ErrNilService, where Service returns a failing service.
func TestBuilder_Build_NilServiceIsAnError(t *testing.T) {
	svc, err := rampart.NewBuilder[string, string]().Layer(appendLayer("a")).Build(nil)
	assert.Nil(t, svc)
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "rampart: Builder.Build given a nil service: rampart: nil service")

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

func TestInvoke_CallsTheRequest(t *testing.T) {
	var calls atomic.Int32
	svc, err := rampart.NewBuilder[rampart.Func[int], int]().
		Layer(rampart.LayerFunc[rampart.Func[int], int](func(inner rampart.Service[rampart.Func[int], int]) rampart.Service[rampart.Func[int], int] {
			// A layer that calls its inner service twice, as a retry does.
			return rampart.ServiceFunc[rampart.Func[int], int](func(ctx context.Context, fn rampart.Func[int]) (int, error) {
				if _, err := inner.Call(ctx, fn); err == nil {
					return 0, errors.New("first attempt should fail")
				}
				return inner.Call(ctx, fn)
			})
		})).
		Build(rampart.Invoke[int]())
	require.NoError(t, err)
	got, err := svc.Call(t.Context(), func(ctx context.Context) (int, error) {
		if calls.Add(1) == 1 {
			return 0, errors.New("transient")
		}
		return 42, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 42, got)
	assert.Equal(t, int32(2), calls.Load(), "the function runs once per attempt")
}

func TestInvoke_NilFuncFails(t *testing.T) {
	got, err := rampart.Invoke[int]().Call(t.Context(), nil)
	assert.Zero(t, got)
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "rampart: Invoke given a nil Func: rampart: nil service")
}

func TestInvoke_DoesNotAllocate(t *testing.T) {
	svc := rampart.Invoke[int]()
	fn := rampart.Func[int](func(context.Context) (int, error) { return 1, nil })
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, fn) }))
}
