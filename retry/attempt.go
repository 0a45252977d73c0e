package retry

import (
	"context"

	"github.com/rampart-go/rampart"
)

// Attempt returns the number of the attempt that ctx belongs to, counting
// from 1, as the layer of [NewLayer] numbers them: 1 for a first attempt
// (and for any context that carries no number), 2 for the first retry,
// and so on. A layer below the retry layer (a recorder, a log) asks it to
// tell a retry from a first attempt. The retry layer adds the number to
// the context of each retry only, with [rampart.WithAttempt], so a first
// attempt costs nothing; it is the innermost retry layer's number when
// retry layers are nested, and, in a server whose adapter honours a
// trusted peer's attempt number, the peer's until a retry layer here
// numbers its own. It is [rampart.AttemptOf], but 1 where that is 0.
func Attempt(ctx context.Context) int {
	return max(1, rampart.AttemptOf(ctx))
}
