// Package nilvalue tells whether an interface value holds a nil pointer or
// a nil func: an interface that is not nil, yet whose method calls would
// dereference nil. Configs use it to report such a value as an error
// instead of panicking on the first call. A plain nil check cannot see
// inside the interface, and the types are the caller's, hence reflection.
package nilvalue

import (
	"fmt"
	"reflect"
)

// Is reports whether v is a non-nil interface holding a nil pointer or a
// nil func. Is(nil) is false: a nil interface is the caller's to check (it
// usually means a default).
func Is(v any) bool {
	if v == nil {
		return false
	}
	rv := reflect.ValueOf(v)
	return (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Func) && rv.IsNil()
}

// Field returns, when v is a nil pointer or func inside a non-nil
// interface (see Is), an error naming what ("budget: Config.Clock must not
// be a nil func or pointer, got *clock.Fake(nil)"), and nil otherwise.
func Field(what string, v any) error {
	if !Is(v) {
		return nil
	}
	return fmt.Errorf("%s must not be a nil func or pointer, got %T(nil)", what, v)
}
