package rampart

import "fmt"

// PanicError is the value a layer panics with on the caller's goroutine
// when code it ran for the call on another goroutine panicked there: a
// hedged copy of the request (package hedge), a call the timeout layer
// may abandon (package timeout). The panic is recovered on that goroutine,
// carried to the caller and raised again once the layer has cancelled and
// awaited its other work, so that the caller and the layers above it see
// it as they see a panic on the caller's own goroutine (a circuit breaker
// counts it as a failure, a retry layer does not retry it, a server that
// recovers its handlers' panics recovers it), instead of the program
// ending from a goroutine nobody can recover in.
//
// A PanicError is an error, so a recover that logs errors prints the
// value and the stack of the goroutine that panicked, which a plain
// re-panic of the value would lose. Its methods accept a nil
// *PanicError: Error is "<nil>" and Unwrap nil, as for a nil
// [*net.OpError].
type PanicError struct {
	// Value is the value the code panicked with.
	Value any
	// Stack is the stack of the goroutine that panicked, taken where the
	// panic was recovered (the panicking frames are still on it), as
	// runtime/debug.Stack formats it.
	Stack []byte
}

// Error reports the panic value and the stack of the goroutine that
// panicked.
func (p *PanicError) Error() string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("rampart: panic on a goroutine of the call: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns Value if it is an error, and nil otherwise, so that
// [errors.Is] and [errors.As] find an error the code panicked with.
func (p *PanicError) Unwrap() error {
	if p == nil {
		return nil
	}
	err, _ := p.Value.(error)
	return err
}
