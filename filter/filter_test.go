package filter_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/filter"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/wrap"
)

var errBoom = errors.New("boom")

// backend answers req doubled, fails for 13, and counts its calls.
func backend(calls *atomic.Int64) rampart.Service[int, int] {
	return rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		calls.Add(1)
		if req == 13 {
			return -1, errBoom
		}
		return req * 2, nil
	})
}

func TestNewLayer_RequiresCheck(t *testing.T) {
	_, err := filter.NewLayer[int, int](nil)
	assert.EqualError(t, err, "filter: check must not be nil")
}

func TestLayer_CheckErrorReturnedAsIs(t *testing.T) {
	type negativeError struct{ error }
	layer, err := filter.NewLayer[int, int](func(ctx context.Context, req int) error {
		if req < 0 {
			return &negativeError{fmt.Errorf("negative request %d", req)}
		}
		return nil
	})
	require.NoError(t, err)
	var calls atomic.Int64
	svc := layer.Wrap(backend(&calls))

	resp, err := svc.Call(t.Context(), -4)
	assert.Zero(t, resp)
	var ne *negativeError
	require.ErrorAs(t, err, &ne)
	assert.EqualError(t, err, "negative request -4")
	assert.Zero(t, calls.Load(), "a refused request must not reach the inner service")

	resp, err = svc.Call(t.Context(), 4)
	assert.NoError(t, err)
	assert.Equal(t, 8, resp)

	resp, err = svc.Call(t.Context(), 13)
	assert.Same(t, errBoom, err, "inner errors come back unchanged")
	assert.Equal(t, -1, resp)
	assert.Equal(t, int64(2), calls.Load())
}

func TestLayer_RejectsWithSentinel(t *testing.T) {
	type tenantKey struct{}
	layer, err := filter.NewLayer[int, int](func(ctx context.Context, req int) error {
		if ctx.Value(tenantKey{}) == "suspended" {
			return filter.ErrRefused
		}
		return nil
	})
	require.NoError(t, err)
	var calls atomic.Int64
	svc := layer.Wrap(backend(&calls))

	_, err = svc.Call(context.WithValue(t.Context(), tenantKey{}, "suspended"), 1)
	assert.Same(t, filter.ErrRefused, err)
	assert.EqualError(t, err, "filter: refused")
	assert.Zero(t, calls.Load())

	resp, err := svc.Call(context.WithValue(t.Context(), tenantKey{}, "active"), 1)
	assert.NoError(t, err)
	assert.Equal(t, 2, resp)
}

func TestLayer_RefusalAllocatesNothing(t *testing.T) {
	layer, err := filter.NewLayer[int, int](positive)
	require.NoError(t, err)
	var calls atomic.Int64
	svc := layer.Wrap(backend(&calls))
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, 1) }), "allowed")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, -1) }), "rejected")
}

func BenchmarkLayer(b *testing.B) {
	layer, err := filter.NewLayer[int, int](positive)
	if err != nil {
		b.Fatal(err)
	}
	var calls atomic.Int64
	svc := layer.Wrap(backend(&calls))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, 1)
	}
}

func TestWrap(t *testing.T) {
	var calls atomic.Int64
	svc, err := wrap.Service(backend(&calls), filter.NewLayer, func(ctx context.Context, req int) error {
		if req == 0 {
			return filter.ErrRefused
		}
		return nil
	})
	require.NoError(t, err)
	_, err = svc.Call(t.Context(), 0)
	assert.Same(t, filter.ErrRefused, err)
	resp, err := svc.Call(t.Context(), 2)
	assert.NoError(t, err)
	assert.Equal(t, 4, resp)
	assert.Equal(t, int64(1), calls.Load())
	_, err = wrap.Service(backend(&calls), filter.NewLayer, nil)
	assert.EqualError(t, err, "filter: check must not be nil")
}

// positive refuses a request that is not > 0 with filter.ErrRefused.
func positive(_ context.Context, req int) error {
	if req > 0 {
		return nil
	}
	return filter.ErrRefused
}

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	pass := func(context.Context, string) error { return nil }
	ok := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name:  "nil check",
			Build: func() (rampart.Service[string, string], error) { return wrap.Service(ok, filter.NewLayer, nil) },
			Want:  "filter: check must not be nil",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := filter.NewLayer[string, string](pass)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "filter: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}
