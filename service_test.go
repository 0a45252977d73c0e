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

// TestServiceFunc_NZ1_NilServiceFuncFails: a nil ServiceFunc's call, which
// a layer's Wrap cannot tell from a working service (the interface is not
// nil), fails with ErrNilService instead of panicking.
func TestServiceFunc_NZ1_NilServiceFuncFails(t *testing.T) {
	var f rampart.ServiceFunc[string, int]
	got, err := f.Call(t.Context(), "req")
	assert.Zero(t, got)
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "rampart: call of a nil ServiceFunc: rampart: nil service")
}
