package rampartgrpc

import (
	"context"
	"errors"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/tap"

	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/ratelimit"
)

// TapConfig configures [NewTapHandle]. Every field is optional; the zero
// TapConfig refuses nothing.
type TapConfig struct {
	// Skip, if not nil, reports whether a call to a method, by its full
	// name, is let through without a check: health checks, as
	// [ServerConfig.Skip]. It must be safe for concurrent use.
	Skip func(method string) bool
	// Shed, if not nil, refuses a call with UNAVAILABLE while it is not
	// ready: a *concurrency.Limiter with every slot taken, say (its Ready reports
	// that without taking a slot).
	Shed loadshed.Readiness
	// Limiter, if not nil, refuses a call with RESOURCE_EXHAUSTED when it
	// has no token for it now: a rate limit for the whole server.
	Limiter *rate.Limiter
	// Keyed, if not nil, refuses a call with RESOURCE_EXHAUSTED when the
	// limiter of its key has no token for it now: a rate limit per client.
	Keyed *ratelimit.Keyed
	// Key chooses a call's key for Keyed, such as [KeyPeer] or
	// [KeyMetadata]; the [ServerCall] it receives has FullMethod and its
	// context (which carries the peer) set, and its metadata read from the
	// request headers without a copy. Nil means [KeyPeer]. It must be safe
	// for concurrent use.
	Key func(ServerCall) string
}

// NewTapHandle returns a [tap.ServerInHandle] that refuses a call before
// grpc-go decodes its request or starts its handler's goroutine: the
// cheapest refusal a server can make, for a server under more load than
// it can even read. Install it with [grpc.InTapHandle]. It checks, in
// order, Shed, Limiter, and Keyed; a call that passes has taken one token
// from each limiter it passed. A bad cfg is an error naming the field. The
// handle is safe for concurrent use.
//
// A refusal ends the stream with RESOURCE_EXHAUSTED (a rate limit) or
// UNAVAILABLE (Shed), with no trailer: grpc-go answers a tap's refusal
// with a status alone, so it cannot carry a grpc-retry-pushback-ms
// trailer. Use the server interceptors ([NewUnaryServerInterceptor]) where
// clients need the pushback, and for limits that must be held while a call
// runs (a concurrency limit): a tap handle sees a call start, never end.
func NewTapHandle(cfg TapConfig) (tap.ServerInHandle, error) {
	if cfg.Keyed == nil && cfg.Key != nil {
		return nil, errors.New("rampartgrpc: TapConfig.Key is set without TapConfig.Keyed")
	}
	if cfg.Key == nil {
		cfg.Key = KeyPeer
	}
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		switch {
		case cfg.Skip != nil && cfg.Skip(info.FullMethodName):
		case cfg.Shed != nil && !cfg.Shed.Ready():
			return ctx, errTapShed
		case cfg.Limiter != nil && !cfg.Limiter.Allow():
			return ctx, errTapLimited
		case cfg.Keyed != nil:
			key := cfg.Key(ServerCall{FullMethod: info.FullMethodName, ctx: ctx, header: info.Header})
			if !cfg.Keyed.Limiter(key).Allow() {
				return ctx, errTapLimited
			}
		}
		return ctx, nil
	}, nil
}

var (
	errTapShed    = &refusedError{code: codes.Unavailable, err: loadshed.ErrOverloaded}
	errTapLimited = &refusedError{code: codes.ResourceExhausted, err: ratelimit.ErrLimited}
)
