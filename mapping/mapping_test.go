package mapping_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/mapping"
)

var errBoom = errors.New("boom")

// square squares n, fails for 13 with a partial response -1, and counts calls.
func square(calls *atomic.Int64) rampart.Service[int, int] {
	return rampart.ServiceFunc[int, int](func(ctx context.Context, n int) (int, error) {
		calls.Add(1)
		if n == 13 {
			return -1, errBoom
		}
		return n * n, nil
	})
}

func TestAdapters_RejectNil(t *testing.T) {
	var calls atomic.Int64
	svc := square(&calls)
	parse := func(ctx context.Context, s string) (int, error) { return strconv.Atoi(s) }
	format := func(n int) (string, error) { return strconv.Itoa(n), nil }
	result := func(n int, err error) (string, error) { return strconv.Itoa(n), err }

	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{name: "Request svc", err: second(mapping.Request[string, int, int](nil, parse)), want: "mapping: svc must not be nil: rampart: nil service"},
		{name: "Request f", err: second(mapping.Request[string, int, int](svc, nil)), want: "mapping: f must not be nil"},
		{name: "Response svc", err: second(mapping.Response[int, int, string](nil, format)), want: "mapping: svc must not be nil: rampart: nil service"},
		{name: "Response f", err: second(mapping.Response[int, int, string](svc, nil)), want: "mapping: f must not be nil"},
		{name: "Result svc", err: second(mapping.Result[int, int, string](nil, result)), want: "mapping: svc must not be nil: rampart: nil service"},
		{name: "Result f", err: second(mapping.Result[int, int, string](svc, nil)), want: "mapping: f must not be nil"},
		{name: "NewErrorLayer f", err: second(mapping.NewErrorLayer[int, int](nil)), want: "mapping: f must not be nil"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.EqualError(t, tc.err, tc.want) })
	}
}

func second[T any](_ T, err error) error { return err }

func TestRequest(t *testing.T) {
	var calls atomic.Int64
	svc, err := mapping.Request(square(&calls), func(ctx context.Context, s string) (int, error) {
		return strconv.Atoi(s)
	})
	require.NoError(t, err)

	resp, err := svc.Call(t.Context(), "7")
	assert.NoError(t, err)
	assert.Equal(t, 49, resp)

	resp, err = svc.Call(t.Context(), "seven")
	assert.Zero(t, resp)
	var ne *strconv.NumError
	require.ErrorAs(t, err, &ne, "the converter's error is returned as is")
	assert.Equal(t, int64(1), calls.Load(), "a failed conversion must not call svc")

	resp, err = svc.Call(t.Context(), "13")
	assert.Same(t, errBoom, err)
	assert.Equal(t, -1, resp, "svc's partial response is kept")
}

func TestRequest_PassesContext(t *testing.T) {
	type key struct{}
	inner := rampart.ServiceFunc[int, string](func(ctx context.Context, n int) (string, error) {
		return fmt.Sprint(ctx.Value(key{}), n), nil
	})
	svc, err := mapping.Request(inner, func(ctx context.Context, s string) (int, error) {
		assert.Equal(t, "v", ctx.Value(key{}))
		return len(s), nil
	})
	require.NoError(t, err)
	resp, err := svc.Call(context.WithValue(t.Context(), key{}, "v"), "abc")
	assert.NoError(t, err)
	assert.Equal(t, "v3", resp)
}

func TestResponse(t *testing.T) {
	var calls, converted atomic.Int64
	errOdd := errors.New("odd square")
	svc, err := mapping.Response(square(&calls), func(n int) (string, error) {
		converted.Add(1)
		if n%2 == 1 {
			return "", errOdd
		}
		return strconv.Itoa(n), nil
	})
	require.NoError(t, err)

	resp, err := svc.Call(t.Context(), 4)
	assert.NoError(t, err)
	assert.Equal(t, "16", resp)

	_, err = svc.Call(t.Context(), 3)
	assert.Same(t, errOdd, err)

	resp, err = svc.Call(t.Context(), 13)
	assert.Same(t, errBoom, err)
	assert.Empty(t, resp)
	assert.Equal(t, int64(2), converted.Load(), "failures are not converted")
}

func TestResult(t *testing.T) {
	var calls atomic.Int64
	svc, err := mapping.Result(square(&calls), func(n int, err error) (string, error) {
		if err != nil {
			return fmt.Sprintf("partial %d", n), nil
		}
		return strconv.Itoa(n), nil
	})
	require.NoError(t, err)
	resp, err := svc.Call(t.Context(), 13)
	assert.NoError(t, err)
	assert.Equal(t, "partial -1", resp)
	resp, err = svc.Call(t.Context(), 5)
	assert.NoError(t, err)
	assert.Equal(t, "25", resp)
}

func TestErrorLayer(t *testing.T) {
	var calls, mapped atomic.Int64
	errDomain := errors.New("square: unavailable")
	layer, err := mapping.NewErrorLayer[int, int](func(err error) error {
		mapped.Add(1)
		return fmt.Errorf("%w (%w)", errDomain, err)
	})
	require.NoError(t, err)
	svc := layer.Wrap(square(&calls))

	resp, err := svc.Call(t.Context(), 13)
	assert.Equal(t, -1, resp, "the partial response is kept")
	assert.ErrorIs(t, err, errDomain)
	assert.ErrorIs(t, err, errBoom)
	assert.EqualError(t, err, "square: unavailable (boom)")

	resp, err = svc.Call(t.Context(), 3)
	assert.NoError(t, err)
	assert.Equal(t, 9, resp)
	assert.Equal(t, int64(1), mapped.Load(), "successes are not mapped")
}

func TestErrorLayer_NilErrorMakesSuccess(t *testing.T) {
	var calls atomic.Int64
	layer, err := mapping.NewErrorLayer[int, int](func(error) error { return nil })
	require.NoError(t, err)
	resp, err := layer.Wrap(square(&calls)).Call(t.Context(), 13)
	assert.NoError(t, err)
	assert.Equal(t, -1, resp)
}

func TestAdapters_AllocateNothing(t *testing.T) {
	var calls atomic.Int64
	req, err := mapping.Request(square(&calls), func(ctx context.Context, n int8) (int, error) { return int(n), nil })
	require.NoError(t, err)
	resp, err := mapping.Response(square(&calls), func(n int) (int64, error) { return int64(n), nil })
	require.NoError(t, err)
	layer, err := mapping.NewErrorLayer[int, int](func(err error) error { return err })
	require.NoError(t, err)
	errs := layer.Wrap(square(&calls))
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = req.Call(ctx, 3) }), "Request")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = resp.Call(ctx, 3) }), "Response")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = errs.Call(ctx, 13) }), "NewErrorLayer")
}

func BenchmarkRequest(b *testing.B) {
	var calls atomic.Int64
	svc, err := mapping.Request(square(&calls), func(ctx context.Context, n int8) (int, error) { return int(n), nil })
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, 3)
	}
}

// NewErrorLayer's layer wraps a service; a nil f is an error.
func TestNewErrorLayer_Wraps(t *testing.T) {
	var calls atomic.Int64
	svc, err := wrap.Service(square(&calls), mapping.NewErrorLayer, func(err error) error { return fmt.Errorf("square: %w", err) })
	require.NoError(t, err)

	resp, err := svc.Call(t.Context(), 13)
	assert.Equal(t, -1, resp, "the partial response is kept")
	assert.ErrorIs(t, err, errBoom)
	assert.EqualError(t, err, "square: boom")

	_, err = wrap.Service(square(&calls), mapping.NewErrorLayer, nil)
	assert.EqualError(t, err, "mapping: f must not be nil")
}

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	same := func(_ context.Context, s string) (string, error) { return s, nil }
	ok := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "Request of nil service",
			Build: func() (rampart.Service[string, string], error) {
				return mapping.Request[string, string, string](nil, same)
			},
			Want:       "mapping: svc must not be nil: rampart: nil service",
			NilService: true,
		},
		{
			Name: "Response of nil service",
			Build: func() (rampart.Service[string, string], error) {
				return mapping.Response[string, string, string](nil, func(s string) (string, error) { return s, nil })
			},
			Want:       "mapping: svc must not be nil: rampart: nil service",
			NilService: true,
		},
		{
			Name: "nil f",
			Build: func() (rampart.Service[string, string], error) {
				return mapping.Request[string, string, string](ok, nil)
			},
			Want: "mapping: f must not be nil",
		},
		{
			Name: "error layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := mapping.NewErrorLayer[string, string](func(err error) error { return err })
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "mapping: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}
