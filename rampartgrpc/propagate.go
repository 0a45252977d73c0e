package rampartgrpc

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/inbound"
	"github.com/rampart-go/rampart/internal/nilservice"
)

// The metadata keys that carry what a caller says about a call to the
// next hop, with the values of ramparthttp's headers of the same names:
// the client interceptors send them, [PropagatedLayer] honours them from
// trusted peers. The deadline travels as gRPC's own grpc-timeout.
const (
	// CriticalityKey carries the call's [rampart.Criticality]:
	// "critical", "default" or "sheddable".
	CriticalityKey = "rampart-criticality"
	// AttemptKey carries which attempt at its call this one is, in
	// decimal: 1 for the first, 2 for the first retry (see
	// [rampart.WithAttempt]).
	AttemptKey = "rampart-attempt"
)

// outgoing returns ctx with the call's criticality c (which no layer
// changes, so the interceptor reads it once per call, from the caller's
// context) and the attempt number ctx carries added to its outgoing
// metadata, and ctx itself, at no cost, when there is neither to send.
func outgoing(ctx context.Context, c rampart.Criticality) context.Context {
	n := rampart.AttemptOf(ctx)
	switch {
	case c == rampart.DefaultCriticality && n == 0:
		return ctx
	case n == 0:
		return metadata.AppendToOutgoingContext(ctx, CriticalityKey, c.String())
	case c == rampart.DefaultCriticality:
		return metadata.AppendToOutgoingContext(ctx, AttemptKey, strconv.Itoa(n))
	}
	return metadata.AppendToOutgoingContext(ctx, CriticalityKey, c.String(), AttemptKey, strconv.Itoa(n))
}

// PropagateConfig configures [PropagatedLayer].
type PropagateConfig struct {
	// Trusted reports whether the call comes from a peer whose
	// [CriticalityKey] and [AttemptKey] the server honours: another
	// service of the same system (by its address, [peer.FromContext], or
	// its certificate), never a client on the internet, which could
	// otherwise mark itself critical. It is given the incoming call's
	// context. Nil means no peer is trusted. It must be safe for
	// concurrent use.
	Trusted func(ctx context.Context) bool
	// MaxTimeout caps the deadline of every call, whoever sent it:
	// grpc-go gives the handler the deadline of the caller's grpc-timeout,
	// and a longer one is cut to MaxTimeout from the call's arrival. A
	// call without a deadline keeps none. Zero means no cap; it must not be
	// negative.
	MaxTimeout time.Duration
}

// PropagatedLayer returns a server layer that gives each call from a
// trusted peer (cfg.Trusted) the criticality and the attempt number its
// client interceptor sent ([rampart.CriticalityOf] and
// [rampart.AttemptOf] read them; a retry layer below does not retry a
// call that is already a retry), and caps every call's deadline at
// cfg.MaxTimeout. Put it first in [ServerConfig.Layers].
//
// The deadline itself needs nothing from rampart: grpc-go sets the
// handler's context from the caller's grpc-timeout, and a handler that
// passes that context to its own calls sends the time left on; rampart's
// interceptors keep that context, so the deadline stays true across hops.
//
// Metadata from a trusted peer is read as ramparthttp's headers are:
// missing or malformed values are ignored, and of several well-formed
// ones the least criticality and the highest attempt win. From other
// peers it is ignored. It returns an error when cfg.MaxTimeout is
// negative.
func PropagatedLayer(cfg PropagateConfig) (ServerLayer, error) {
	if cfg.MaxTimeout < 0 {
		return nil, fmt.Errorf("rampartgrpc: PropagateConfig.MaxTimeout must be >= 0 (0 means no cap), got %v", cfg.MaxTimeout)
	}
	return rampart.LayerFunc[ServerCall, any](func(inner ServerService) ServerService {
		if nilservice.Is(inner) {
			return rampart.Failing[ServerCall, any]("rampartgrpc: PropagatedLayer: Wrap")
		}
		return rampart.ServiceFunc[ServerCall, any](func(ctx context.Context, c ServerCall) (any, error) {
			// Only a deadline beyond the cap gets a context of its own.
			if dl, ok := ctx.Deadline(); ok && cfg.MaxTimeout > 0 && time.Until(dl) > cfg.MaxTimeout {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, cfg.MaxTimeout)
				defer cancel()
			}
			if cfg.Trusted != nil && cfg.Trusted(c.Context()) {
				md, _ := metadata.FromIncomingContext(c.Context())
				if cr, ok := inbound.Criticality(md.Get(CriticalityKey)); ok {
					ctx = rampart.WithCriticality(ctx, cr)
				}
				if n, ok := inbound.Attempt(md.Get(AttemptKey)); ok {
					ctx = rampart.WithAttempt(ctx, n)
				}
			}
			return inner.Call(ctx, c)
		})
	}), nil
}
