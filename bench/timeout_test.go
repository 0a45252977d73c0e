package bench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fstimeout "github.com/failsafe-go/failsafe-go/timeout"
	"github.com/rampart-go/rampart"
)

// The timeout scenarios: a call that succeeds at once under a one-hour
// timeout, alone (Timeout) and outside a retry layer, a retry budget and a
// circuit breaker (TimeoutStack). The floor is the least any timeout costs in
// Go: context.WithTimeoutCause around the direct call, then its cancel.

func BenchmarkTimeout(b *testing.B)              { timeoutAlone().run(b, false) }
func BenchmarkTimeoutParallel(b *testing.B)      { timeoutAlone().run(b, true) }
func BenchmarkTimeoutStack(b *testing.B)         { timeoutStack().run(b, false) }
func BenchmarkTimeoutStackParallel(b *testing.B) { timeoutStack().run(b, true) }

// limit is every timeout contender's time limit. It never fires; an hour,
// not a second, so that under callgrind (instructions.sh), where a run lasts
// many seconds, no stopped timer of an earlier call reaches its deadline
// during the run: the runtime's clean-up of those made the count vary.
const limit = time.Hour

func timeoutAlone() scenario {
	return scenario{want: allSucceed, contenders: append([]contender{floorTimeout}, append(rampartTimeout(),
		contender{name: "failsafe", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			return failsafeLayer(failsafe.With[Resp](fstimeout.New[Resp](limit)))
		}},
	)...)}
}

func timeoutStack() scenario {
	return scenario{want: allSucceed, contenders: append([]contender{floorTimeout}, append(rampartTimeoutStack(),
		contender{name: "failsafe", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			return failsafeLayer(failsafe.With[Resp](fstimeout.New[Resp](limit), failsafeRetry(true), failsafeBreaker()))
		}},
	)...)}
}

// errLimit is the floor's timeout cause.
var errLimit = errors.New("bench: timed out")

// floorTimeout is a bare context.WithTimeoutCause around the backend.
var floorTimeout = contender{name: "floor", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		return bareTimeout{inner: inner}
	})
}}

type bareTimeout struct{ inner rampart.Service[Req, Resp] }

func (s bareTimeout) Call(ctx context.Context, req Req) (Resp, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, limit, errLimit)
	defer cancel()
	return s.inner.Call(ctx, req)
}
