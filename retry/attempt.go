package retry

import "context"

// attemptKey is the context key of the attempt number of a retry.
type attemptKey struct{}

// Attempt returns the number of the attempt that ctx belongs to, counting
// from 1, as the layer of [NewLayer] numbers them: 1 for a first attempt
// (and for any context no retry layer made), 2 for the first retry, and
// so on. A layer below the retry layer (a recorder, a log) asks it to tell
// a retry from a first attempt. The retry layer adds the number to the
// context of each retry only, so a first attempt costs nothing; it is the
// innermost retry layer's number when retry layers are nested.
func Attempt(ctx context.Context) int {
	if n, ok := ctx.Value(attemptKey{}).(int); ok {
		return n
	}
	return 1
}
