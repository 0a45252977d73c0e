package rampartgrpc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// ClientConfig configures the client interceptors
// ([NewUnaryClientInterceptor], [NewStreamClientInterceptor]). The zero
// ClientConfig is valid and does nothing but pass calls on (no method is
// declared safe to repeat, so nothing is retried or hedged, and there is no
// limit, breaker or timeout). Every zero field is a documented default; a
// bad field is an error naming it.
//
// The interceptors are built from rampart's layers, outermost first: retry
// (within its budget), hedge (unary calls only, when Hedge is set),
// concurrency limit, breaker, per-attempt timeout; the
// order of the package rampart documentation. So every attempt and every
// hedged copy asks the breaker, an open breaker ends the retries at once,
// and an attempt that runs out of time counts as a breaker failure.
//
// ramparthttp.ClientConfig has the same fields, with the same meanings,
// for HTTP.
type ClientConfig struct {
	// Skip, if not nil, reports whether a call to a method, by its full
	// name ("/pkg.Service/Method"), bypasses the whole stack: such a call
	// is sent once as grpc-go would send it, and no breaker, limit, retry,
	// budget or timeout sees it. Use it for health checks
	// ("/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"),
	// which must reach the server even while its breaker is open; [Methods]
	// builds one from a list of names. It must be safe for concurrent use.
	Skip func(method string) bool
	// Breaker, if not nil, guards every attempt with one breaker shared by
	// every method and target the interceptor sees. Share it among the
	// clients of one dependency. At most one of Breaker and Breakers may be
	// set.
	Breaker *circuitbreaker.Breaker
	// Breakers, if not nil, guards every attempt with the breaker that the
	// group holds for BreakerKey's key, so a method (or a target) that
	// fails trips only its own breaker. A zero Group is one with the
	// defaults of [circuitbreaker.NewGroup].
	Breakers *circuitbreaker.Group[string]
	// BreakerKey chooses the key of Breakers for a call, from its full
	// method name ("/pkg.Service/Method") and its connection. Nil means
	// [PerMethod]; [PerTarget] keys by the connection's target. It is used
	// only with Breakers, must be safe for concurrent use and must not
	// block.
	BreakerKey func(method string, cc *grpc.ClientConn) string
	// Classify judges each attempt for the breaker from the error it ended
	// with: a failure, a success or neither ([rampart.Ignored]).
	// Nil means [Classify]. It is not asked about an attempt the caller
	// cancelled (that is ignored), and is used only with a breaker. It must
	// be safe for concurrent use. A panic in it is recorded as the failure
	// [circuitbreaker.ErrPanicked] and is not recovered: it goes on up the
	// caller's stack.
	Classify func(err error) rampart.Outcome
	// Recorder, if not nil, records every attempt of a unary call for
	// package sim to replay, between the retry (and hedge) layers and the
	// breaker, keyed by the full method name and judged by Classify as the
	// breaker judges it: an UNAVAILABLE is a failure, a RESOURCE_EXHAUSTED
	// is ignored, an attempt the breaker refused is recorded as refused,
	// and a retry carries its attempt number. Streams are not recorded. A
	// zero Recorder makes every unary call fail with an error naming it.
	Recorder *record.Recorder
	// Retry configures the retries of the methods declared safe to repeat.
	Retry RetryConfig
	// Hedge, if not nil, hedges unary calls to the methods declared safe to
	// repeat (Retry.Methods). Its Budget is required. Nil means no hedging.
	Hedge *HedgeConfig
	// Limit, if not nil, bounds the unary attempts and the streams in
	// flight at once: a *concurrency.Limiter, or a
	// *concurrency.AdaptiveLimiter that learns the bound from the latency
	// of unary calls (after Netflix's concurrency-limits). An attempt or a
	// stream that finds every slot taken is not sent and fails at once
	// with RESOURCE_EXHAUSTED, as a server's back-pressure would: its error
	// matches [concurrency.ErrLimited], has a RetryAfter() time.Duration
	// method, and its status carries the same delay as a
	// google.rpc.RetryInfo detail (the limiter's estimate of when a slot
	// frees, or [DefaultPushback] when it has none). It is not retried, and
	// the breaker does not count it. A stream holds its slot from its
	// opening until it ends, however it ends (see
	// [NewStreamClientInterceptor]); how long it stays open is not a
	// latency sample of an AdaptiveLimiter.
	Limit concurrency.Slots
	// AttemptTimeout, if positive, bounds each attempt of a unary call and
	// the opening of a stream (until grpc-go hands the stream over); it
	// never ends a stream once open. Zero means no per-attempt timeout (the
	// caller's deadline still applies); negative is an error. An attempt
	// that runs out of time fails with DEADLINE_EXCEEDED, matches
	// [timeout.ErrTimeout], counts as a breaker failure, and is retried (by
	// the default Retry.Retryable) if its method is safe to repeat, as an
	// HTTP attempt that runs out of its AttemptTimeout is: cutting a slow
	// attempt short to try again is what a per-attempt timeout is for
	// (Envoy's per_try_timeout). The caller's own deadline is never
	// retried, and a DEADLINE_EXCEEDED from the server is not retried by
	// default either, since the call may have done its work.
	AttemptTimeout time.Duration
	// Name names the Limit and AttemptTimeout layers in their events;
	// Observer, if not nil, is told of the attempts the limit refuses and
	// those the attempt timeout ends (see package observe). The retries
	// and hedges take theirs from Retry and Hedge, and a breaker from its
	// own Config, as ramparthttp's do.
	Name     string
	Observer observe.Observer
}

// RetryConfig configures the retries of the client interceptors. Every
// zero field takes the default of the matching [retry.Config] field.
type RetryConfig struct {
	// Methods reports whether a method, by its full name
	// ("/pkg.Service/Method"), is safe to send more than once: only such
	// methods are retried or hedged. Nil means none is; [Methods] builds one
	// from a list of names. It must be safe for concurrent use.
	Methods func(method string) bool
	// MaxAttempts bounds the attempts per call, including the first: 3
	// means one call and at most two retries. Zero means
	// [retry.DefaultMaxAttempts]; 1 disables retries; negative is an error.
	MaxAttempts int
	// Backoff gives the delay before each retry; nil means retry's default
	// exponential backoff with full jitter.
	Backoff retry.Backoff
	// Budget bounds retries to a share of recent calls (a *budget.Budget,
	// shared by every client of the same dependency). Every call deposits,
	// retried or not, whatever its method. Nil means a budget of the
	// interceptor's own with package budget's defaults (20% of recent calls
	// plus 10 retries a second); [budget.Always] means no budget, bounded
	// only by MaxAttempts.
	Budget retry.Budget
	// MaxHint caps the delay a grpc-retry-pushback-ms trailer may ask for;
	// zero means [retry.DefaultMaxHint]. A longer pushback is shortened to
	// MaxHint.
	MaxHint time.Duration
	// Retryable reports whether an attempt that ended with err is worth
	// retrying. Nil means [Retryable]: UNAVAILABLE, and an attempt that ran
	// out of ClientConfig.AttemptTimeout. Whatever it
	// returns, an open breaker, the caller's cancellation, and an attempt
	// whose server sent a negative or malformed grpc-retry-pushback-ms
	// trailer are never retried, nor is a refusal of ClientConfig.Limit.
	// It must be safe for concurrent use.
	Retryable func(err error) bool
	// Name names the retry layers in their events; see [retry.Config].
	Name string
	// Observer, if not nil, is told about each retry and the end of each
	// call that wanted one (see [retry.Config]). A stream's loop that stops
	// because the call was committed (its response headers or its final
	// status reached the caller, so it is never retried again) ends with
	// [ErrCommitted].
	Observer observe.Observer
}

// HedgeConfig configures hedging of unary calls ([ClientConfig.Hedge]).
// Budget is required; every other zero field takes the default of the
// matching [hedge.Config] field. A copy that panics below the interceptor
// (in the next interceptor of the chain, say) makes the caller's call
// panic on its own goroutine, once the other copies have been cancelled
// and awaited, with a [*rampart.PanicError] holding the value and the
// copy's stack, as hedge.NewLayer says.
type HedgeConfig struct {
	// Budget bounds the hedges to a share of recent calls: every call that
	// may be hedged deposits, every hedge withdraws. A *budget.Budget
	// satisfies it; give hedging a budget of its own, apart from the
	// retries'. Required: nil, or a nil pointer such as a nil
	// *budget.Budget, is an error. To hedge without a bound, pass
	// budget.Always; to turn hedging off, leave ClientConfig.Hedge nil.
	Budget hedge.Budget
	// MaxAttempts is how many copies of a call may be sent in total, the
	// original included; zero means [hedge.DefaultMaxAttempts].
	MaxAttempts int
	// Delay is how long to wait for an answer before sending the next
	// copy; zero means [hedge.DefaultDelay]; negative is an error.
	Delay time.Duration
	// Quantile, when not zero, learns the delay as this quantile of
	// recent latencies (a fraction in (0, 1]: 0.95 for p95), from sending a
	// call to its answer, over every call the interceptor hedges, whatever
	// its method: methods whose latencies differ want interceptors of their
	// own. Zero means a fixed Delay. See [hedge.Config.Quantile].
	Quantile float64
	// Window is how many recent latencies the percentile is taken over;
	// only with a Quantile. Zero means [hedge.DefaultWindow].
	Window int
	// MinSamples is how many latencies must be seen before the learned
	// delay replaces Delay; only with a Quantile. Zero means
	// [hedge.DefaultMinSamples], or Window if that is smaller.
	MinSamples int
	// Name names the hedge layer in its events; Observer, if not nil, is
	// told of each copy sent and each hedged call's winner (see
	// [hedge.Config]).
	Name     string
	Observer observe.Observer
}

// Methods returns a [RetryConfig.Methods] or a [ClientConfig.Skip] that
// reports true for exactly the full method names given
// ("/pkg.Service/Method"). The result is safe for concurrent use.
func Methods(names ...string) func(method string) bool {
	if len(names) <= maxScannedMethods {
		// A few names are found sooner by comparing them (lengths
		// first) than by hashing a method name on every call.
		few := slices.Clone(names)
		return func(method string) bool { return slices.Contains(few, method) }
	}
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	return func(method string) bool {
		_, ok := set[method]
		return ok
	}
}

// maxScannedMethods is the most names Methods compares one by one rather
// than looking up in a map.
const maxScannedMethods = 8

// PerMethod is a [ClientConfig.BreakerKey] that gives every method its
// own breaker: the key is the full method name.
func PerMethod(method string, _ *grpc.ClientConn) string { return method }

// PerTarget is a [ClientConfig.BreakerKey] that gives every target its own
// breaker: the key is the connection's target ([grpc.ClientConn.Target]).
func PerTarget(_ string, cc *grpc.ClientConn) string {
	if cc == nil {
		return ""
	}
	return cc.Target()
}

// call is one attempt of a unary RPC, the request type of the client stack.
type call struct {
	method     string
	req, reply any
	cc         *grpc.ClientConn
	opts       []grpc.CallOption
	invoker    grpc.UnaryInvoker
	repeat     bool                // the method is safe to send more than once
	crit       rampart.Criticality // the caller's context's
}

// result is what an attempt returns besides its error.
type result struct {
	trailer metadata.MD // the attempt's trailer, read when it may be retried
	reply   any         // the reply of a hedged copy, which has its own
}

type service = rampart.Service[call, result]

// invokeService sends an attempt with grpc-go. An attempt that may be
// retried also asks for the trailer, where a server's pushback is.
type invokeService struct{}

// attemptOpts holds an attempt's trailer and call options in one
// allocation.
type attemptOpts struct {
	trailer metadata.MD
	buf     [4]grpc.CallOption
}

func (*invokeService) Call(ctx context.Context, c call) (result, error) {
	ctx = outgoing(ctx, c.crit)
	if !c.repeat {
		return result{}, c.invoker(ctx, c.method, c.req, c.reply, c.cc, c.opts...)
	}
	a := new(attemptOpts)
	opts := append(append(a.buf[:0], c.opts...), grpc.Trailer(&a.trailer))
	err := c.invoker(ctx, c.method, c.req, c.reply, c.cc, opts...)
	return result{trailer: a.trailer}, err
}

// client holds the built stacks of the client interceptors.
type client struct {
	unary service           // the full stack, for methods that may be repeated
	once  service           // the stack without retry and hedge
	skip  func(string) bool // nil: no method is skipped
	// budget receives a deposit for every call sent once, so that such
	// calls still earn retries for the others; never nil (newClient gives
	// a default one).
	budget retry.Budget

	// For streams.
	breaker         *circuitbreaker.Breaker
	breakers        *circuitbreaker.Group[string]
	breakerKey      func(string, *grpc.ClientConn) string
	classify        func(error) rampart.Outcome
	classifyDefault bool                // classify is Classify
	methods         func(string) bool   // nil: no method is safe to repeat
	limit           *concurrency.Config // nil without ClientConfig.Limit
	streamRetry     rampart.Layer[streamCall, grpc.ClientStream]
	commitRetry     rampart.Layer[*commitCall, commitResult]
	attemptTimeout  time.Duration
}

func newClient(cfg ClientConfig) (*client, error) {
	if cfg.Breaker != nil && cfg.Breakers != nil {
		return nil, errors.New("rampartgrpc: ClientConfig.Breaker and ClientConfig.Breakers are both set; set at most one")
	}
	if cfg.AttemptTimeout < 0 {
		return nil, fmt.Errorf("rampartgrpc: ClientConfig.AttemptTimeout must be >= 0 (0 means no per-attempt timeout), got %v", cfg.AttemptTimeout)
	}
	if cfg.Retry.Budget == nil {
		b, err := budget.New(budget.Config{})
		if err != nil {
			return nil, fmt.Errorf("rampartgrpc: the default Retry.Budget: %w", err)
		}
		cfg.Retry.Budget = b
	}
	c := &client{
		budget:         cfg.Retry.Budget,
		skip:           cfg.Skip,
		breaker:        cfg.Breaker,
		breakers:       cfg.Breakers,
		breakerKey:     cfg.BreakerKey,
		classify:       cfg.Classify,
		methods:        cfg.Retry.Methods,
		attemptTimeout: cfg.AttemptTimeout,
	}
	if c.breakerKey == nil {
		c.breakerKey = PerMethod
	}
	if c.classify == nil {
		c.classify, c.classifyDefault = Classify, true
	}
	retryable := Retryable
	if cfg.Retry.Retryable != nil {
		user := cfg.Retry.Retryable
		retryable = func(err error) bool {
			// A refusal of the client's own limit: sending more would not
			// help.
			return !errors.Is(err, concurrency.ErrLimited) && user(err)
		}
	}

	// The layers below the retry and hedge, shared by both stacks.
	inner := rampart.NewBuilder[call, result]()
	if cfg.Recorder != nil {
		inner = inner.Layer(record.NewLayer(record.LayerConfig[call, result]{
			Recorder: cfg.Recorder,
			Key:      func(r call) string { return r.method },
			Classify: func(_ result, err error) rampart.Outcome { return c.classify(err) },
		}))
	}
	if cfg.Limit != nil {
		c.limit = &concurrency.Config{Limiter: cfg.Limit, Mode: concurrency.Refuse, Name: cfg.Name, Observer: cfg.Observer}
		l, err := concurrency.NewLayer[call, result](*c.limit)
		if err != nil {
			return nil, fmt.Errorf("rampartgrpc: ClientConfig.Limit: %w", err)
		}
		inner = inner.Layer(l)
	}
	if cb := c.breakerLayer(); cb != nil {
		inner = inner.Layer(cb)
	}
	if cfg.AttemptTimeout > 0 {
		to, err := timeout.NewLayer(timeout.Config[call, result]{Timeout: cfg.AttemptTimeout, Name: cfg.Name, Observer: cfg.Observer})
		if err != nil {
			return nil, fmt.Errorf("rampartgrpc: ClientConfig.AttemptTimeout: %w", err)
		}
		inner = inner.Layer(to)
	}
	// A pointer: a value would be called through the wrapper the
	// compiler makes for a value's method called through an interface.
	c.once = inner.Service(&invokeService{})

	rt, err := retry.NewLayer(retry.Config[call, result]{
		MaxAttempts: cfg.Retry.MaxAttempts,
		Backoff:     cfg.Retry.Backoff,
		Budget:      cfg.Retry.Budget,
		MaxHint:     cfg.Retry.MaxHint,
		Retryable:   func(_ result, err error) bool { return err != nil && retryable(err) },
		Hint:        func(r result, _ error) (time.Duration, bool) { return pushback(r.trailer) },
		Name:        cfg.Retry.Name,
		Observer:    cfg.Retry.Observer,
	})
	if err != nil {
		return nil, fmt.Errorf("rampartgrpc: ClientConfig.Retry: %w", err)
	}
	outer := rampart.NewBuilder[call, result]().Layer(rt)
	if cfg.Hedge != nil {
		h, err := hedge.NewLayer(hedge.Config[call, result]{
			Hedgeable:   hedgeable,
			Budget:      cfg.Hedge.Budget,
			MaxAttempts: cfg.Hedge.MaxAttempts,
			Delay:       cfg.Hedge.Delay,
			Quantile:    cfg.Hedge.Quantile,
			Window:      cfg.Hedge.Window,
			MinSamples:  cfg.Hedge.MinSamples,
			Name:        cfg.Hedge.Name,
			Observer:    cfg.Hedge.Observer,
			// A negative pushback ends the hedging too (gRFC A6).
			Hint: func(r result, _ error) (time.Duration, bool) { return pushback(r.trailer) },
			// A copy the limit refused is no answer: another copy may be
			// on its way to one.
			Accept: func(_ result, err error) bool {
				return err == nil || (!retryable(err) && !errors.Is(err, concurrency.ErrLimited))
			},
		})
		if err != nil {
			return nil, fmt.Errorf("rampartgrpc: ClientConfig.Hedge: %w", err)
		}
		outer = outer.Layer(rampart.LayerFunc[call, result](mergeReply)).Layer(h).Layer(rampart.LayerFunc[call, result](freshReply))
	}
	c.unary = outer.Service(c.once)

	c.streamRetry, err = retry.NewLayer(retry.Config[streamCall, grpc.ClientStream]{
		MaxAttempts: cfg.Retry.MaxAttempts,
		Backoff:     cfg.Retry.Backoff,
		Budget:      cfg.Retry.Budget,
		MaxHint:     cfg.Retry.MaxHint,
		Retryable:   func(_ grpc.ClientStream, err error) bool { return err != nil && retryable(err) },
		Name:        cfg.Retry.Name,
		Observer:    cfg.Retry.Observer,
	})
	if err != nil {
		return nil, fmt.Errorf("rampartgrpc: ClientConfig.Retry: %w", err)
	}
	if c.commitRetry, err = newCommitRetry(cfg.Retry, retryable); err != nil {
		return nil, fmt.Errorf("rampartgrpc: ClientConfig.Retry: %w", err)
	}
	return c, nil
}

// breakerLayer returns the breaker layer of the unary stack, or nil when
// there is no breaker.
func (c *client) breakerLayer() rampart.Layer[call, result] {
	classify := func(_ result, err error) rampart.Outcome { return c.classify(err) }
	if c.classifyDefault {
		// A success is told without asking grpc-go for its code.
		classify = func(_ result, err error) rampart.Outcome {
			if err == nil {
				return rampart.Success
			}
			return Classify(err)
		}
	}
	switch {
	case c.breaker != nil:
		return circuitbreaker.NewLayer[call, result](c.breaker, classify)
	case c.breakers != nil:
		// NewGroupLayer fails only for a nil group or key.
		l, _ := circuitbreaker.NewGroupLayer[call, result](c.breakers, func(r call) string {
			return c.breakerKey(r.method, r.cc)
		}, classify)
		return l
	}
	return nil
}

// NewUnaryClientInterceptor returns a [grpc.UnaryClientInterceptor] that
// sends every call through the stack cfg describes (see [ClientConfig]);
// install it with [grpc.WithUnaryInterceptor] or
// [grpc.WithChainUnaryInterceptor]. A bad cfg is an error naming the
// field.
//
// A method that cfg.Retry.Methods does not declare safe to repeat is sent
// once, through the breaker and the per-attempt timeout only (and deposits
// into the retry budget). Errors reach the caller as grpc-go returned them,
// or wrapped to add what happened (a retry's [*retry.ExhaustedError], a
// timeout's [*timeout.Error]); [status.Code] and [status.FromError] see
// through the wrapping. A call the breaker refuses was not sent: its error
// has the code UNAVAILABLE and matches [circuitbreaker.ErrOpen].
//
// With hedging, every copy of a call decodes into a reply of its own, made
// from the caller's reply message (which must then be a [proto.Message];
// other replies are not hedged), and the winning copy's reply is merged
// into the caller's with [proto.Merge] after [proto.Reset]: a cost of one
// message per copy and one copy of the reply, paid only by hedged calls.
//
// The interceptor is safe for concurrent use.
func NewUnaryClientInterceptor(cfg ClientConfig) (grpc.UnaryClientInterceptor, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	// The interceptor is a closure rather than the method value
	// c.interceptUnary, whose wrapper would move the eight arguments once
	// more on every call.
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if c.skip != nil && c.skip(method) {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		r := call{method: method, req: req, reply: reply, cc: cc, opts: opts, invoker: invoker, repeat: c.methods != nil && c.methods(method), crit: rampart.CriticalityOf(ctx)}
		var err error
		if r.repeat {
			_, err = c.unary.Call(ctx, r)
		} else {
			c.budget.Deposit()
			_, err = c.once.Call(ctx, r)
		}
		return statusOf(err)
	}, nil
}

// statusOf makes sure that an error the call was refused with, without
// being sent, reads as UNAVAILABLE: an open breaker's error unwraps to the
// failure that tripped it, whose code would otherwise be taken for the
// call's own.
func statusOf(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		return err
	}
	if errors.Is(err, circuitbreaker.ErrOpen) {
		return &refusedError{code: codes.Unavailable, err: err}
	}
	if errors.Is(err, concurrency.ErrLimited) {
		d := DefaultPushback
		if w, ok := errors.AsType[interface {
			error
			RetryAfter() time.Duration
		}](err); ok && w.RetryAfter() > 0 {
			d = w.RetryAfter()
		}
		return &limitedError{refusedError: refusedError{code: codes.ResourceExhausted, err: err}, delay: d}
	}
	return err
}

// limitedError is the refusal of the client's concurrency limit: a
// RESOURCE_EXHAUSTED with the wait it asks for, as a RetryAfter method and
// as a google.rpc.RetryInfo detail.
type limitedError struct {
	refusedError
	delay time.Duration
}

// RetryAfter returns how long the caller should wait before trying again.
func (e *limitedError) RetryAfter() time.Duration { return e.delay }

// GRPCStatus returns RESOURCE_EXHAUSTED with a RetryInfo detail of the
// delay.
func (e *limitedError) GRPCStatus() *status.Status {
	st := status.New(e.code, e.err.Error())
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(e.delay)}); err == nil {
		return d
	}
	return st
}

// refusedError gives a gRPC code to an error that has none of its own, or
// whose chain holds the wrong one.
type refusedError struct {
	code codes.Code
	err  error
}

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// GRPCStatus returns the status grpc-go reports for e.
func (e *refusedError) GRPCStatus() *status.Status { return status.New(e.code, e.err.Error()) }

// hedgeable reports whether a call may be hedged: its method is safe to
// repeat, and its reply is a protobuf message that each copy can have a
// fresh instance of.
func hedgeable(c call) bool {
	_, ok := c.reply.(proto.Message)
	return c.repeat && ok
}

// freshReply gives each hedged copy a reply of its own, so that copies
// running at once never decode into the same message.
func freshReply(inner service) service {
	return rampart.ServiceFunc[call, result](func(ctx context.Context, c call) (result, error) {
		m, ok := c.reply.(proto.Message)
		if !ok || !c.repeat {
			return inner.Call(ctx, c)
		}
		own := m.ProtoReflect().New().Interface()
		c.reply = own
		r, err := inner.Call(ctx, c)
		r.reply = own
		return r, err
	})
}

// mergeReply copies the winning copy's reply into the caller's.
func mergeReply(inner service) service {
	return rampart.ServiceFunc[call, result](func(ctx context.Context, c call) (result, error) {
		r, err := inner.Call(ctx, c)
		if err == nil && r.reply != nil && r.reply != c.reply {
			m := c.reply.(proto.Message)
			proto.Reset(m)
			proto.Merge(m, r.reply.(proto.Message))
		}
		return r, err
	})
}
