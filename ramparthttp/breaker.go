package ramparthttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/nilservice"
)

// BreakerConfig configures [BreakerLayer]: one breaker for every request
// (Breaker), or one per key from a group (Breakers), and how each attempt is
// judged for it. Set exactly one of Breaker and Breakers.
type BreakerConfig struct {
	// Breaker, if not nil, guards every request. Share one breaker among
	// all the clients of one dependency.
	Breaker *circuitbreaker.Breaker
	// Breakers, if not nil, guards each request with the breaker the group
	// holds for BreakerKey(req), created on demand, so that each endpoint
	// has its own breaker: one bad host among many trips only its own, and
	// requests to the others go on (the models are Envoy's outlier
	// detection and Finagle's per-endpoint failure accrual).
	// [circuitbreaker.Group] says how many breakers the group holds and
	// when it drops them, and [circuitbreaker.Group.States] lists them for
	// a status page. A zero Group is one with the defaults of
	// [circuitbreaker.NewGroup].
	Breakers *circuitbreaker.Group[string]
	// BreakerKey chooses the key of Breakers for a request; nil means
	// [Host]. It is used only with Breakers, must be safe for concurrent
	// use and must not panic.
	BreakerKey func(req *http.Request) string
	// Classify judges each attempt for the breaker: a failure, a success,
	// or neither ([rampart.Ignored]). Nil means [Classify]. It must
	// be safe for concurrent use.
	Classify circuitbreaker.Classifier[*http.Response]
	// BodyLease bounds how long the body of a HalfOpen probe's response
	// may hold the breaker's probe slot once its headers have arrived:
	// when it passes with the body neither read to its end nor closed, the
	// probe counts as the success its headers were, and the slot frees.
	// Zero means [DefaultBodyLease]; negative is an error. A body that
	// stalls is a failure only if its read fails before then (give the
	// client an AttemptTimeout shorter than BodyLease). Bodies of other
	// calls hold their permit until they are closed, which holds up nobody.
	BodyLease time.Duration
}

// DefaultBodyLease is [BreakerConfig.BodyLease] and
// [ClientConfig.BodyLease] when zero: long enough to read the response of
// a probe, short against the minute of [circuitbreaker.DefaultProbeLease]
// during which a probe whose body is never closed would otherwise refuse
// every other request.
const DefaultBodyLease = 5 * time.Second

// BreakerLayer returns a layer that guards requests with cfg.Breaker, or
// with the breaker cfg.Breakers holds for the request's key, and judges
// each attempt for it:
//   - an error returned after the caller cancelled the request's context is
//     ignored without asking cfg.Classify (the caller gave up);
//   - any other error is judged by cfg.Classify; an error it judges a
//     failure is then given to [circuitbreaker.Config.IsFailure], which may
//     still count it as a success;
//   - a response judged a failure counts as one, with a [*StatusError]
//     naming its status as its cause (it matches
//     [circuitbreaker.ErrBadResponse]); one judged
//     [rampart.Ignored] counts neither way (a 429 by default);
//   - a response judged a success is judged again by its body: a body read
//     to its end, or closed by the caller before its end, is a success; a
//     body whose read fails (the server stalled past the attempt's timeout,
//     or reset the connection) is a failure, judged as a transport error is.
//     So a server that sends good headers and then hangs still trips the
//     breaker.
//
// An outcome the classifier returns that is none of Success, Failure and
// Ignored counts as a failure.
//
// A refused request is not sent, and fails with the breaker's
// [*circuitbreaker.OpenError], which matches [circuitbreaker.ErrOpen].
// Responses, failures included, are returned unchanged but for the body
// wrapper. While a response's body is open its call holds its permit: in
// HalfOpen a probe slot is freed when the body is read to its end or
// closed, and until then every other request is refused; a probe's body
// that is neither holds the slot for cfg.BodyLease (by default
// [DefaultBodyLease], 5s), after which the probe counts as a success.
// Close every body, as net/http requires anyway. A request whose context
// is already done fails with the context's error without asking the
// breaker or looking up its key. Layers from the same breaker share its
// state. A panic in the call, in the classifier or in the breaker's
// IsFailure is recorded as the failure [circuitbreaker.ErrPanicked] and is
// not recovered: it goes on up the caller's stack.
//
// BreakerLayer returns an error when both or neither of cfg.Breaker and
// cfg.Breakers are set, or cfg.BodyLease is negative.
func BreakerLayer(cfg BreakerConfig) (Layer, error) {
	switch {
	case cfg.BodyLease < 0:
		return nil, fmt.Errorf("ramparthttp: BreakerConfig.BodyLease must be >= 0 (0 means DefaultBodyLease, %v), got %v", DefaultBodyLease, cfg.BodyLease)
	case cfg.Breaker != nil && cfg.Breakers != nil:
		return nil, errors.New("ramparthttp: BreakerConfig.Breaker and BreakerConfig.Breakers must not both be set (one breaker for every request, or one per key)")
	case cfg.Breaker == nil && cfg.Breakers == nil:
		return nil, errors.New("ramparthttp: BreakerConfig needs a Breaker or Breakers, got neither")
	}
	if cfg.BreakerKey == nil {
		cfg.BreakerKey = Host
	}
	if cfg.Classify == nil {
		cfg.Classify = Classify
	}
	if cfg.BodyLease == 0 {
		cfg.BodyLease = DefaultBodyLease
	}
	if cfg.Breakers != nil {
		return groupBreakerLayer{g: cfg.Breakers, key: cfg.BreakerKey, classify: cfg.Classify, lease: cfg.BodyLease}, nil
	}
	return breakerLayer{b: cfg.Breaker, classify: cfg.Classify, lease: cfg.BodyLease}, nil
}

type breakerLayer struct {
	b        *circuitbreaker.Breaker
	classify circuitbreaker.Classifier[*http.Response]
	lease    time.Duration
}

// Wrap returns inner guarded by the breaker; a nil inner gives a Service
// whose every call fails with an error matching [rampart.ErrNilService].
func (l breakerLayer) Wrap(inner Service) Service {
	if nilservice.Is(inner) {
		return rampart.Failing[*http.Request, *http.Response]("ramparthttp: BreakerLayer: Wrap")
	}
	return breakerService{b: l.b, classify: l.classify, lease: l.lease, inner: inner}
}

type breakerService struct {
	b        *circuitbreaker.Breaker
	classify circuitbreaker.Classifier[*http.Response]
	lease    time.Duration
	inner    Service
}

func (s breakerService) Call(ctx context.Context, req *http.Request) (*http.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Acquired into a local: a refused request allocates nothing. The
	// permit moves into the response body's wrapper when there is a body
	// to judge.
	p, err := s.b.TryAcquire()
	if err != nil {
		return nil, err
	}
	normal := false
	defer func() {
		if !normal {
			p.Failure(circuitbreaker.ErrPanicked)
		}
	}()
	resp, err := s.inner.Call(ctx, req)
	// normal is set only once the outcome is judged: a panic in classify
	// or in IsFailure is a failure, as one in the call is.
	switch {
	case err != nil && circuitbreaker.ClassifyContext(ctx, err) == rampart.Ignored:
		p.Ignore() // the caller gave up: classify is not asked
	case err != nil:
		switch s.classify(resp, err) {
		case rampart.Success:
			p.Success()
		case rampart.Ignored:
			p.Ignore()
		default:
			p.DoneContext(ctx, err) // a failure, unless IsFailure says not
		}
	default:
		switch s.classify(resp, nil) {
		case rampart.Success:
			judgeBody(ctx, &p, resp, s.lease)
		case rampart.Ignored:
			p.Ignore()
		default:
			p.Failure(statusError(resp))
		}
	}
	normal = true
	return resp, err
}

// Host is the default key of [BreakerConfig.BreakerKey] and
// [ClientConfig.BreakerKey]: req.URL.Host, the host and port as the URL
// names them ("api.example" and "api.example:443" are two keys); "" for a
// nil req or a req without a URL.
func Host(req *http.Request) string {
	if req == nil || req.URL == nil {
		return ""
	}
	return req.URL.Host
}

type groupBreakerLayer struct {
	g        *circuitbreaker.Group[string]
	key      func(*http.Request) string
	classify circuitbreaker.Classifier[*http.Response]
	lease    time.Duration
}

// Wrap returns inner guarded by the group's breakers; a nil inner gives a
// Service whose every call fails with an error matching
// [rampart.ErrNilService].
func (l groupBreakerLayer) Wrap(inner Service) Service {
	if nilservice.Is(inner) {
		return rampart.Failing[*http.Request, *http.Response]("ramparthttp: BreakerLayer: Wrap")
	}
	return groupBreakerService{l: l, inner: inner}
}

type groupBreakerService struct {
	l     groupBreakerLayer
	inner Service
}

func (s groupBreakerService) Call(ctx context.Context, req *http.Request) (*http.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	one := breakerService{b: s.l.g.Breaker(s.l.key(req)), classify: s.l.classify, lease: s.l.lease, inner: s.inner}
	return one.Call(ctx, req)
}
