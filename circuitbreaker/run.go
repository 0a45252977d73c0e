package circuitbreaker

import (
	"context"
	"errors"
	"fmt"

	"github.com/rampart-go/rampart"
)

// errRunNilBreaker is what Run returns for a nil *Breaker.
var errRunNilBreaker = errors.New("circuitbreaker: Run: nil *Breaker (build one with circuitbreaker.New)")

// errRunNilContext is what Run returns for a nil context instead of
// panicking.
var errRunNilContext = errors.New("circuitbreaker: Run: nil context (pass context.Background() or the caller's context)")

// errRunNilFunc is what Run returns for a nil fn.
var errRunNilFunc = fmt.Errorf("circuitbreaker: Run: nil fn: %w", rampart.ErrNilService)

// Run calls fn through b exactly as a call through [NewLayer] over b, for
// a plain function (gobreaker's Execute). A nil b, fn or ctx is an error
// (for fn, one matching [rampart.ErrNilService]). Safe for concurrent use.
func Run[T any](ctx context.Context, b *Breaker, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	switch {
	case b == nil:
		return zero, errRunNilBreaker
	case fn == nil:
		return zero, errRunNilFunc
	case ctx == nil:
		return zero, errRunNilContext
	}
	// The layer's service, on the stack: Run is the layer's call path with
	// fn as the inner service and no request.
	s := service[struct{}, T]{b: b, inner: funcService[T](fn)}
	return s.Call(ctx, struct{}{})
}

// funcService is fn as a rampart.Service that ignores its empty request.
// A func value fits in an interface without allocating.
type funcService[T any] func(context.Context) (T, error)

func (f funcService[T]) Call(ctx context.Context, _ struct{}) (T, error) { return f(ctx) }
