package rampartgrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/timeout"
)

// DefaultPushback is the wait a server advertises in the
// grpc-retry-pushback-ms trailer of a refusal whose error carries no delay
// of its own (a full concurrency limit, load shedding) when
// ServerConfig.Pushback is zero: retry's first backoff step
// ([retry.DefaultBase]), so a client that honours it waits about as long as
// it would have without it.
const DefaultPushback = 100 * time.Millisecond

// ServerCall is one incoming call, the request type of a server stack.
// Unary calls carry their decoded request in Req; streams carry their
// stream in Stream. A layer that changes the context (a timeout) passes
// its context down with Call; the innermost service runs the handler with
// that context (for a stream, through a stream whose Context returns it).
type ServerCall struct {
	// FullMethod is the method's full name, "/pkg.Service/Method".
	FullMethod string
	// Req is the decoded request of a unary call; nil for a stream.
	Req any
	// Stream is the stream of a streaming call; nil for a unary call.
	Stream grpc.ServerStream

	ctx    context.Context // the incoming call's, for key functions
	header metadata.MD     // the request headers, when known without a copy
	unary  grpc.UnaryHandler
	stream grpc.StreamHandler
	srv    any
}

// Context returns the incoming call's context, as grpc-go gave it to the
// interceptor (or to the tap handle): it carries the call's metadata
// ([metadata.FromIncomingContext]) and peer ([peer.FromContext]). Key
// functions read it; layers use the context they are called with.
func (c ServerCall) Context() context.Context {
	if c.ctx == nil {
		return context.Background()
	}
	return c.ctx
}

// ServerService is a server-side gRPC service, as the stack of a server
// interceptor sees it. Its Call returns the handler's response (nil for a
// stream) and error.
type ServerService = rampart.Service[ServerCall, any]

// ServerLayer is a layer of a server-side gRPC stack: any rampart layer
// built with the type arguments [ServerCall] and any, such as
//
//	lim, err := concurrency.NewLayer[rampartgrpc.ServerCall, any](concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
//	rl, err := ratelimit.NewKeyedLayer[rampartgrpc.ServerCall, any](k, rampartgrpc.KeyPeer, ratelimit.Refuse)
//
// Layers must call the inner service at most once per call and wait for it
// to return: retry and hedge (the handler would run twice, on one stream)
// and timeout's Abandon mode do not belong in a server stack.
type ServerLayer = rampart.Layer[ServerCall, any]

// ServerConfig configures the server interceptors. The zero ServerConfig
// is valid: interceptors with no layers pass every call to its handler.
// ramparthttp.ServerConfig is its counterpart for HTTP.
type ServerConfig struct {
	// Layers is the stack, outermost first, as with [rampart.Builder]:
	// Layers[0] sees each call first. Nil entries are skipped. A typical
	// order is rate limit, load shedding, concurrency limit, timeout.
	Layers []ServerLayer
	// Skip, if not nil, reports whether a call to a method, by its full
	// name, bypasses the layers and goes straight to its handler: health
	// checks ("/grpc.health.v1.Health/Check"), which must be answered while
	// the server refuses other load; [Methods] builds one from a list of
	// names. It must be safe for concurrent use.
	Skip func(method string) bool
	// Pushback is the wait advertised in the grpc-retry-pushback-ms
	// trailer of a refusal whose error carries no delay of its own (a full
	// concurrency limit, load shedding), rounded up to whole
	// milliseconds. Zero means [DefaultPushback]; negative is an error.
	Pushback time.Duration
}

// NewUnaryServerInterceptor returns a [grpc.UnaryServerInterceptor] that
// sends every unary call through cfg.Layers to its handler; install it with
// [grpc.UnaryInterceptor] or [grpc.ChainUnaryInterceptor]. A bad cfg is an
// error naming the field. It is safe for concurrent use and starts no
// goroutine.
//
// A call a layer refuses never reaches the handler, and ends with a status
// computed from the layer's error:
//
//	refusal                                        code                 trailer
//	rate limit ([ratelimit.ErrLimited])            RESOURCE_EXHAUSTED   its RetryAfter
//	concurrency limit ([concurrency.ErrLimited])   UNAVAILABLE          ServerConfig.Pushback
//	load shedding ([loadshed.ErrOverloaded])       UNAVAILABLE          ServerConfig.Pushback
//	open breaker ([circuitbreaker.ErrOpen])        UNAVAILABLE          its RetryAfter, else Pushback
//	timeout ([timeout.ErrTimeout])                 DEADLINE_EXCEEDED    none
//
// The trailer is grpc-retry-pushback-ms, in whole milliseconds rounded up
// so that a client never comes back early (gRFC A6), or -1, "do not retry",
// for a wait that never ends ([rate.InfDuration], [rampart.Forever]).
// An error that carries a gRPC status of its own (a handler's) is returned
// as it is; any other error is returned unchanged, and grpc-go reports it
// as UNKNOWN.
func NewUnaryServerInterceptor(cfg ServerConfig) (grpc.UnaryServerInterceptor, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if s.skip(info.FullMethod) {
			return handler(ctx, req)
		}
		resp, err := s.svc.Call(ctx, ServerCall{FullMethod: info.FullMethod, Req: req, ctx: ctx, unary: handler})
		if err != nil {
			err = s.refuse(err, func(md metadata.MD) { _ = grpc.SetTrailer(ctx, md) })
		}
		return resp, err
	}, nil
}

// NewStreamServerInterceptor returns a [grpc.StreamServerInterceptor] that
// sends every stream through cfg.Layers to its handler, as
// [NewUnaryServerInterceptor] does for unary calls, with the same
// refusals; install it with [grpc.StreamInterceptor] or
// [grpc.ChainStreamInterceptor]. A layer holds what it takes for a stream
// (a concurrency slot) until the handler returns, and a timeout layer ends
// the stream's context at its deadline.
func NewStreamServerInterceptor(cfg ServerConfig) (grpc.StreamServerInterceptor, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if s.skip(info.FullMethod) {
			return handler(srv, ss)
		}
		_, err := s.svc.Call(ss.Context(), ServerCall{FullMethod: info.FullMethod, Stream: ss, ctx: ss.Context(), stream: handler, srv: srv})
		if err != nil {
			err = s.refuse(err, ss.SetTrailer)
		}
		return err
	}, nil
}

type server struct {
	svc      ServerService
	skip     func(string) bool // never nil
	pushback time.Duration
}

func newServer(cfg ServerConfig) (*server, error) {
	if cfg.Pushback < 0 {
		return nil, fmt.Errorf("rampartgrpc: ServerConfig.Pushback must be >= 0 (0 means DefaultPushback, %v), got %v", DefaultPushback, cfg.Pushback)
	}
	if cfg.Pushback == 0 {
		cfg.Pushback = DefaultPushback
	}
	b := rampart.NewBuilder[ServerCall, any]()
	for _, l := range cfg.Layers {
		if l != nil {
			b = b.Layer(l)
		}
	}
	skip := cfg.Skip
	if skip == nil {
		skip = func(string) bool { return false }
	}
	return &server{svc: b.Service(handlerService{}), skip: skip, pushback: cfg.Pushback}, nil
}

// handlerService runs a call's handler with the context the stack passes
// down.
type handlerService struct{}

func (handlerService) Call(ctx context.Context, c ServerCall) (any, error) {
	if c.unary != nil {
		return c.unary(ctx, c.Req)
	}
	ss := c.Stream
	if ctx != ss.Context() {
		ss = &contextStream{ServerStream: ss, ctx: ctx}
	}
	return nil, c.stream(c.srv, ss)
}

// contextStream is a server stream whose context a layer replaced.
type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *contextStream) Context() context.Context { return s.ctx }

// refuse turns a layer's refusal into a gRPC status, and sets its pushback
// trailer with setTrailer. Other errors are returned unchanged.
func (s *server) refuse(err error, setTrailer func(metadata.MD)) error {
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		return err // the handler's own status
	}
	code, ok := refusalCode(err)
	if !ok {
		return err
	}
	if code != codes.DeadlineExceeded {
		setTrailer(metadata.Pairs(PushbackKey, pushbackValue(err, s.pushback)))
	}
	return &refusedError{code: code, err: err}
}

// refusalCode returns the code of a refusal by one of rampart's layers.
func refusalCode(err error) (codes.Code, bool) {
	switch {
	case errors.Is(err, ratelimit.ErrLimited):
		return codes.ResourceExhausted, true
	case errors.Is(err, concurrency.ErrLimited), errors.Is(err, loadshed.ErrOverloaded), errors.Is(err, circuitbreaker.ErrOpen):
		return codes.Unavailable, true
	case errors.Is(err, timeout.ErrTimeout):
		return codes.DeadlineExceeded, true
	}
	return codes.OK, false
}

// pushbackValue is the grpc-retry-pushback-ms value for a refusal: its
// own delay when it has one, otherwise def, in milliseconds rounded up and
// at most 2147483647 (gRFC A6's range, about 24.8 days); -1 for a delay
// that never ends.
func pushbackValue(err error, def time.Duration) string {
	d := def
	var w interface{ RetryAfter() time.Duration }
	if errors.As(err, &w) {
		switch rd := w.RetryAfter(); {
		case rd == rate.InfDuration || rd == rampart.Forever:
			return "-1"
		case rd > 0:
			d = rd
		}
	}
	ms := min((d+time.Millisecond-1)/time.Millisecond, maxPushbackMillis)
	return strconv.FormatInt(int64(ms), 10)
}

// KeyPeer is a key function for a per-client rate limit
// ([ratelimit.NewKeyedLayer], [TapConfig.Key]): the host of the call's
// peer address, without its port, so that a client's connections share
// one key; the whole address when it has no port (a Unix socket, an
// in-memory listener), and "" when the context has no peer.
func KeyPeer(c ServerCall) string {
	p, ok := peer.FromContext(c.Context())
	if !ok || p.Addr == nil {
		return ""
	}
	a := p.Addr.String()
	if host, _, err := net.SplitHostPort(a); err == nil {
		return host
	}
	return a
}

// KeyMetadata returns a key function for a per-key rate limit
// ([ratelimit.NewKeyedLayer], [TapConfig.Key]) that reads the call's
// metadata value name (its first value; "" when there is none). Names are
// case-insensitive, as gRPC metadata keys are. The function is safe for
// concurrent use.
func KeyMetadata(name string) func(ServerCall) string {
	name = strings.ToLower(name)
	return func(c ServerCall) string {
		var vs []string
		if c.header != nil {
			vs = c.header[name]
		} else {
			vs = metadata.ValueFromIncomingContext(c.Context(), name)
		}
		if len(vs) == 0 {
			return ""
		}
		return vs[0]
	}
}
