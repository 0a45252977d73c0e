package ramparthttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/shadow"
	"github.com/rampart-go/rampart/timeout"
)

// ClientConfig configures [NewTransport]. The zero ClientConfig is valid:
// it sends requests through [http.DefaultTransport] with retry's defaults
// (up to 3 attempts of an idempotent request) within a retry budget of its
// own (package budget's defaults), and no hedging, limit, breaker or
// timeout. Share one Retry.Budget and one Breaker among the clients of one
// dependency. Every zero field is a documented default; a bad field is an
// error naming it.
//
// rampartgrpc.ClientConfig has the same fields, with the same meanings,
// for gRPC.
type ClientConfig struct {
	// Base sends the requests; nil means [http.DefaultTransport]. A nil
	// pointer (a nil *http.Transport) is an error.
	Base http.RoundTripper
	// Skip, if not nil, reports whether a request bypasses the whole stack:
	// such a request is sent once with Base, and no breaker, limit, retry,
	// budget or timeout sees it. Use it for health checks and the like,
	// which must reach the server even while its breaker is open. It must
	// be safe for concurrent use.
	Skip func(req *http.Request) bool
	// Retry configures the retry layer. Set Retry.MaxAttempts to 1 to
	// disable retries.
	Retry RetryConfig
	// Hedge, if not nil, hedges the requests that may be sent twice; see
	// [HedgeLayer]. Its Budget is required. Nil means no hedging.
	Hedge *HedgeConfig
	// Limit, if not nil, bounds the attempts in flight at once: a
	// *concurrency.Limiter, or a *concurrency.AdaptiveLimiter that learns
	// the bound from latency (after Netflix's concurrency-limits). An
	// attempt that finds every slot taken is not sent and fails at once
	// with a [*concurrency.LimitedError] (matching [concurrency.ErrLimited],
	// its RetryAfter the limiter's estimate of when a slot frees, zero if
	// it has none); it is not retried, and the breaker does not count it.
	// An attempt holds its slot until its response headers arrive (or it
	// fails), not while its body is read. An AdaptiveLimiter takes an
	// attempt that Classify judges no success (a 503) as a failed call, as
	// it takes a transport error: its latency is no sample when it is
	// faster than the limiter's baseline (see
	// [concurrency.AdaptiveLimiter.ReleaseFailed]), so a dependency
	// answering errors at once does not look fast.
	Limit concurrency.Slots
	// Breaker, if not nil, guards every attempt. Share one breaker among all
	// the clients of one dependency. Set at most one of Breaker and
	// Breakers.
	Breaker *circuitbreaker.Breaker
	// Breakers, if not nil, guards every attempt with the breaker the group
	// holds for BreakerKey(req), by default the request's host, so that one
	// bad host among many stops only the requests to it (see
	// [BreakerConfig]). Use it for a client that talks to many endpoints
	// (replicas, shards, tenants' servers); build the group with
	// [circuitbreaker.NewGroup], which sets each breaker's Config and how
	// many keys are held (a zero Group is one with the defaults). Setting
	// both Breaker and Breakers is an error.
	Breakers *circuitbreaker.Group[string]
	// BreakerKey chooses the key of Breakers for a request. Nil means
	// [Host] (req.URL.Host). It is used only with Breakers, must be safe
	// for concurrent use and must not panic.
	BreakerKey func(req *http.Request) string
	// Classify judges each attempt for Breaker or Breakers: a failure, a
	// success, or neither ([rampart.Ignored]); see [BreakerLayer].
	// Nil means [Classify]: transport errors and 5xx except 501 and 505
	// are failures, 429 is neither, anything else a success. It is used
	// only with a breaker, and with an AdaptiveLimiter as Limit (a
	// response it judges no success is a failed call); what is retried is
	// Retry.Retryable's to say. It must be safe for concurrent use.
	Classify circuitbreaker.Classifier[*http.Response]
	// BodyLease bounds how long a HalfOpen probe's response body holds the
	// breaker's probe slot once its headers have arrived; see
	// [BreakerConfig.BodyLease]. Zero means [DefaultBodyLease] (5s);
	// negative is an error. It is used only with a breaker.
	BodyLease time.Duration
	// Recorder, if not nil, records every attempt for package sim to
	// replay, between the retry layer and the breaker, judged by Classify
	// as the breaker judges it (see [RecordLayer]).
	Recorder *record.Recorder
	// Shadow, if not nil, runs its candidate breakers beside Breaker on
	// every attempt, below the recorder, judged by Classify as the
	// breaker judges them, without changing any request (see package
	// shadow); give it Breaker as its Live breaker to see both side by
	// side.
	Shadow *shadow.Shadow
	// AttemptTimeout, if positive, bounds each attempt, reading its response
	// body included (see [TimeoutLayer]). Zero means no per-attempt timeout
	// (the caller's context and http.Client.Timeout still apply); negative
	// is an error. An attempt that runs out of time, before its headers or
	// while its body is read, counts as a breaker failure, and one that
	// runs out before its headers is retried (by the default
	// Retry.Retryable, as any transport error is) if the request may be
	// sent again; the caller's own deadline is never retried. gRPC's
	// AttemptTimeout is retried the same way. An upgraded connection (the
	// body of a 101 Switching Protocols response, a WebSocket's) is the
	// caller's once returned: the deadline ends the attempt's context, not
	// the connection, as gRPC's never ends a stream once open.
	AttemptTimeout time.Duration
	// HeaderTimeout, if positive, bounds the time from sending each attempt
	// until its response headers arrive, and not the reading of the body
	// (see [HeaderTimeoutLayer]). An attempt whose headers come too late
	// is a breaker failure and is retried, as a timeout; a slow body after
	// prompt headers is not. Zero means no such limit; negative is an
	// error. Use HeaderTimeout when responses may be large or streamed,
	// AttemptTimeout when the whole exchange must end in time; with both,
	// a HeaderTimeout not shorter than AttemptTimeout has no effect.
	HeaderTimeout time.Duration
	// Name names the Limit and AttemptTimeout layers in their events;
	// Observer, if not nil, is told of the attempts the limit refuses, of
	// each change of the limit (concurrency.Limiter.SetMax), and of the
	// attempts the attempt timeout ends, before their headers or while
	// their body is read, once each, as the breaker counts them (see
	// package observe). The retries
	// and hedges take theirs from Retry and Hedge, and a breaker from its
	// own Config, as rampartgrpc's do. It must be safe for concurrent use.
	Name     string
	Observer observe.Observer
}

// NewTransport returns an [http.RoundTripper] with the recommended client
// stack around cfg.Base, outermost first: [RetryLayer] with cfg.Retry;
// [HedgeLayer] if cfg.Hedge is set; [RecordLayer] if cfg.Recorder is set;
// the shadow layer if cfg.Shadow is set; the concurrency limit if
// cfg.Limit is set; [BreakerLayer] if cfg.Breaker or cfg.Breakers is set,
// with cfg.BreakerKey and cfg.Classify; [TimeoutLayer] if
// cfg.AttemptTimeout is set; [HeaderTimeoutLayer] if cfg.HeaderTimeout is
// set. So each attempt (and each hedged copy) consults the breaker, an
// open breaker ends the retries at once, and a timed-out attempt counts as
// a breaker failure. Requests cfg.Skip reports true for bypass the stack.
// A bad field is an error naming it and the accepted values. The
// RoundTripper is safe for concurrent use.
//
// A response's body holds its attempt's breaker permit until it is read to
// its end or closed: in HalfOpen, a probe whose body is never closed keeps
// the probe slot, and the breaker refuses every other request meanwhile,
// for cfg.BodyLease (by default [DefaultBodyLease], 5s, rather than the
// minute of the breaker's own ProbeLease), after which the probe counts as
// the success its headers were. Close every body, as net/http requires
// anyway.
func NewTransport(cfg ClientConfig) (http.RoundTripper, error) {
	if nilvalue.Is(cfg.Base) {
		return nil, fmt.Errorf("ramparthttp: ClientConfig.Base must not be a nil pointer, got %T(nil)", cfg.Base)
	}
	if nilvalue.Is(cfg.Limit) {
		return nil, fmt.Errorf("ramparthttp: ClientConfig.Limit must not be a nil pointer, got %T(nil)", cfg.Limit)
	}
	if cfg.AttemptTimeout < 0 {
		return nil, fmt.Errorf("ramparthttp: ClientConfig.AttemptTimeout must be >= 0 (0 means no per-attempt timeout), got %v", cfg.AttemptTimeout)
	}
	if cfg.HeaderTimeout < 0 {
		return nil, fmt.Errorf("ramparthttp: ClientConfig.HeaderTimeout must be >= 0 (0 means no limit on the time to the response headers), got %v", cfg.HeaderTimeout)
	}
	if cfg.BodyLease < 0 {
		return nil, fmt.Errorf("ramparthttp: ClientConfig.BodyLease must be >= 0 (0 means DefaultBodyLease, %v), got %v", DefaultBodyLease, cfg.BodyLease)
	}
	if cfg.Breaker != nil && cfg.Breakers != nil {
		return nil, errors.New("ramparthttp: ClientConfig.Breaker and ClientConfig.Breakers must not both be set (one breaker for every host, or one per key)")
	}
	base := FromRoundTripper(cfg.Base)
	b := NewBuilder()
	retryable := cfg.Retry.Retryable
	if retryable == nil {
		retryable = Retryable
	}
	cfg.Retry.Retryable = func(resp *http.Response, err error) bool {
		// A refusal of the client's own limit: sending more would not help.
		return !errors.Is(err, concurrency.ErrLimited) && retryable(resp, err)
	}
	rt, err := RetryLayer(cfg.Retry)
	if err != nil {
		return nil, fmt.Errorf("ramparthttp: ClientConfig.Retry: %w", err)
	}
	b = b.Layer(rt)
	if cfg.Hedge != nil {
		h, err := HedgeLayer(*cfg.Hedge)
		if err != nil {
			return nil, fmt.Errorf("ramparthttp: ClientConfig.Hedge: %w", err)
		}
		b = b.Layer(h)
	}
	if cfg.Recorder != nil {
		b = b.Layer(RecordLayer(cfg.Recorder, cfg.Classify))
	}
	if cfg.Shadow != nil {
		classify := cfg.Classify
		if classify == nil {
			classify = Classify
		}
		b = b.Layer(shadow.NewLayer[*http.Request, *http.Response](cfg.Shadow, classify, judgeLater))
	}
	if cfg.Limit != nil {
		l, err := concurrency.NewLayer[*http.Request, *http.Response](concurrency.Config{Limiter: cfg.Limit, Mode: concurrency.Refuse, Name: cfg.Name, Observer: cfg.Observer})
		if err != nil {
			return nil, fmt.Errorf("ramparthttp: ClientConfig.Limit: %w", err)
		}
		b = b.Layer(judgedLimit(l, cfg.Limit, cfg.Classify))
	}
	if cfg.Breaker != nil || cfg.Breakers != nil {
		cb, err := BreakerLayer(BreakerConfig{Breaker: cfg.Breaker, Breakers: cfg.Breakers, BreakerKey: cfg.BreakerKey, Classify: cfg.Classify, BodyLease: cfg.BodyLease})
		if err != nil {
			return nil, err // not reached: the fields were checked above
		}
		b = b.Layer(cb)
	}
	if cfg.AttemptTimeout > 0 {
		detach := cancelOnClose
		if cfg.Observer != nil {
			detach = (&attemptTimeout{obs: cfg.Observer, name: cfg.Name, d: cfg.AttemptTimeout}).detach
		}
		to, err := timeout.NewLayer(timeout.Config[*http.Request, *http.Response]{Timeout: cfg.AttemptTimeout, Detach: detach, Name: cfg.Name, Observer: cfg.Observer})
		if err != nil {
			return nil, fmt.Errorf("ramparthttp: ClientConfig.AttemptTimeout: %w", err)
		}
		b = b.Layer(to)
	}
	if cfg.HeaderTimeout > 0 {
		ht, err := HeaderTimeoutLayer(cfg.HeaderTimeout)
		if err != nil {
			return nil, fmt.Errorf("ramparthttp: ClientConfig.HeaderTimeout: %w", err)
		}
		b = b.Layer(ht)
	}
	svc := b.Service(base)
	if cfg.Skip != nil {
		svc = skipService{skip: cfg.Skip, skipped: base, svc: svc}
	}
	return NewRoundTripper(svc), nil
}

// attemptTimeout is NewTransport's AttemptTimeout layer with an
// Observer. Its Detach also tells the Observer of a body read that the
// attempt's deadline ended, as the timeout layer tells it of an attempt
// it ends before its headers: the breaker counts both as timeouts, and
// so does rampart.timeout.fired.
type attemptTimeout struct {
	obs  observe.Observer
	name string
	d    time.Duration
}

func (a *attemptTimeout) detach(resp *http.Response, cancel context.CancelFunc) *http.Response {
	resp = cancelOnClose(resp, cancel)
	if b := wrapper(resp); b != nil && b.timeout == nil {
		b.timeout, b.timeoutCtx = a, context.Background()
		if resp.Request != nil {
			b.timeoutCtx = resp.Request.Context()
		}
	}
	return resp
}

// ended reports a read of a body that failed with err: the attempt's
// deadline ended it when err is the deadline's cause, a [*timeout.Error]
// of this layer's timeout (the caller's own deadline or cancellation
// ends it with the caller's cause).
func (a *attemptTimeout) ended(ctx context.Context, err error) {
	var te *timeout.Error
	if errors.As(err, &te) && te.After == a.d {
		a.obs.Observe(ctx, observe.Event{Source: observe.Timeout, Name: a.name, Kind: observe.TimeoutFired, Duration: a.d})
	}
}

// skipService sends the requests skip reports true for to skipped, and
// every other to svc.
type skipService struct {
	skip         func(*http.Request) bool
	skipped, svc Service
}

func (s skipService) Call(ctx context.Context, req *http.Request) (*http.Response, error) {
	if s.skip(req) {
		return s.skipped.Call(ctx, req)
	}
	return s.svc.Call(ctx, req)
}

// judgedLimit is the limit layer l of NewTransport. Given an
// *concurrency.AdaptiveLimiter, it has l see a response that classify
// (nil: Classify) judges no success as the error of a failed call, and
// returns it again as the response it is: l gives such a call's slot back
// as a failed call's (AdaptiveLimiter.ReleaseFailed), as it does for a
// transport error, so a dependency answering 503s at once through an
// outage does not teach the limiter that it has become fast (a response
// is otherwise no error to a layer). A fixed Limiter's slots do not care,
// and l is returned as it is.
func judgedLimit(l Layer, lim concurrency.Slots, classify circuitbreaker.Classifier[*http.Response]) Layer {
	if _, ok := lim.(*concurrency.AdaptiveLimiter); !ok {
		return l
	}
	if classify == nil {
		classify = Classify
	}
	return rampart.LayerFunc[*http.Request, *http.Response](func(inner Service) Service {
		judged := l.Wrap(rampart.ServiceFunc[*http.Request, *http.Response](func(ctx context.Context, req *http.Request) (*http.Response, error) {
			resp, err := inner.Call(ctx, req)
			if err == nil && resp != nil && classify(resp, nil) != rampart.Success {
				return nil, failedResponse{resp}
			}
			return resp, err
		}))
		return rampart.ServiceFunc[*http.Request, *http.Response](func(ctx context.Context, req *http.Request) (*http.Response, error) {
			resp, err := judged.Call(ctx, req)
			if f, ok := err.(failedResponse); ok {
				return f.resp, nil
			}
			return resp, err
		})
	})
}

// failedResponse carries a response judged a failure through the limit
// layer of judgedLimit, which returns it unchanged; no caller sees it.
type failedResponse struct{ resp *http.Response }

func (failedResponse) Error() string { return "ramparthttp: a response judged a failure" }
