// Package ctxerr says why a context is done, in the one shape every
// rampart layer returns for a call whose context was done before it
// started.
package ctxerr

import (
	"context"
	"fmt"
)

// Reason returns why ctx is done: ctx.Err(), wrapped together with
// [context.Cause] when the cause is a different error, so that
// [errors.Is] finds both ("context canceled: <cause>"). It returns nil
// while ctx is not done.
func Reason(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}
