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

// Run calls fn through b and returns what fn returned, for code that is a
// plain function rather than a [rampart.Service]. It is the seed
// documents' breaker.run(task) and gobreaker's Execute.
//
// Run behaves exactly as a call through the layer from [NewLayer] over b,
// and shares its code:
//   - when ctx is already done, fn is not called and nothing is counted:
//     Run returns ctx.Err();
//   - when b rejects the call, fn is not called: Run returns the
//     [*OpenError], which matches [ErrOpen];
//   - otherwise fn(ctx) is called and its outcome recorded with
//     [Permit.DoneContext]: a nil error is a success, an error returned
//     after the caller cancelled ctx is ignored, any other error is a
//     failure unless [Config.IsFailure] says it is not. The result and
//     error of fn are returned unchanged.
//
// If fn panics, Run records the failure [ErrPanicked] and the panic
// continues with its original stack; Run never recovers it. A call of
// runtime.Goexit in fn is recorded as a failure too.
//
// Run over a nil b, with a nil fn or a nil ctx does not panic: it returns
// the zero T and an error (for a nil fn, one matching
// [rampart.ErrNilService]). A call through a Closed breaker allocates
// nothing beyond what fn does. Safe for concurrent use.
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
