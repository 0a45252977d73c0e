package ramparthttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
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
}

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
// HalfOpen a probe slot is freed when the body is closed, or after the
// breaker's ProbeLease if it never is, and until then every other request
// is refused. Close every body (as net/http requires anyway), and give
// breakers that guard HTTP a ProbeLease about as long as the slowest
// response body takes to read. A request whose context is already done
// fails with the context's error without asking the breaker or looking up
// its key. Layers from the same breaker share its state. A panic in the
// call, in the classifier or in the breaker's IsFailure is recorded as the
// failure [circuitbreaker.ErrPanicked] and is not recovered: it goes on up
// the caller's stack.
//
// BreakerLayer returns an error when both or neither of cfg.Breaker and
// cfg.Breakers are set.
func BreakerLayer(cfg BreakerConfig) (Layer, error) {
	switch {
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
	if cfg.Breakers != nil {
		return groupBreakerLayer{g: cfg.Breakers, key: cfg.BreakerKey, classify: cfg.Classify}, nil
	}
	return breakerLayer{b: cfg.Breaker, classify: cfg.Classify}, nil
}

type breakerLayer struct {
	b        *circuitbreaker.Breaker
	classify circuitbreaker.Classifier[*http.Response]
}

// Wrap returns inner guarded by the breaker; a nil inner gives a Service
// whose every call fails with an error matching [rampart.ErrNilService].
func (l breakerLayer) Wrap(inner Service) Service {
	if inner == nil {
		return rampart.Failing[*http.Request, *http.Response]("ramparthttp: BreakerLayer: Wrap")
	}
	return breakerService{b: l.b, classify: l.classify, inner: inner}
}

type breakerService struct {
	b        *circuitbreaker.Breaker
	classify circuitbreaker.Classifier[*http.Response]
	inner    Service
}

func (s breakerService) Call(ctx context.Context, req *http.Request) (*http.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The permit lives in the body's judge, which may outlive this call.
	j := &judgedBody{ctx: ctx}
	var err error
	if j.p, err = s.b.TryAcquire(); err != nil {
		return nil, err
	}
	normal := false
	defer func() {
		if !normal {
			j.p.Failure(circuitbreaker.ErrPanicked)
		}
	}()
	resp, err := s.inner.Call(ctx, req)
	// normal is set only once the outcome is judged: a panic in classify
	// or in IsFailure is a failure, as one in the call is.
	switch {
	case err != nil && circuitbreaker.ClassifyContext(ctx, err) == rampart.Ignored:
		j.p.Ignore() // the caller gave up: classify is not asked
	case err != nil:
		switch s.classify(resp, err) {
		case rampart.Success:
			j.p.Success()
		case rampart.Ignored:
			j.p.Ignore()
		default:
			j.p.DoneContext(ctx, err) // a failure, unless IsFailure says not
		}
	default:
		switch s.classify(resp, nil) {
		case rampart.Success:
			j.judgeBody(resp)
		case rampart.Ignored:
			j.p.Ignore()
		default:
			j.p.Failure(statusError(resp))
		}
	}
	normal = true
	return resp, err
}

// judgedBody finishes its call's permit when the body is read to its end,
// fails, or is closed.
type judgedBody struct {
	io.ReadCloser
	ctx  context.Context // the call's context, to tell the caller's cancellation apart
	p    circuitbreaker.Permit
	done atomic.Bool // the permit is finished; Read and Close may race
}

// judgeBody finishes j's permit as a success for a response without a body
// to read, and otherwise puts j in front of resp's body to judge it.
func (j *judgedBody) judgeBody(resp *http.Response) {
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		j.p.Success()
		return
	}
	j.ReadCloser = resp.Body
	resp.Body = j
}

func (j *judgedBody) Read(b []byte) (int, error) {
	n, err := j.ReadCloser.Read(b)
	if err != nil {
		j.judge(err)
	}
	return n, err
}

func (j *judgedBody) Close() error {
	// Closed early or after its end: the server did its part. Judged
	// before closing, so a Read that fails because of this Close cannot
	// count as the server's failure.
	j.judge(nil)
	return j.ReadCloser.Close()
}

func (j *judgedBody) judge(err error) {
	if !j.done.CompareAndSwap(false, true) {
		return
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	j.p.DoneContext(j.ctx, err)
}

// Host is the default key of [BreakerConfig.BreakerKey] and
// [ClientConfig.BreakerKey]: req.URL.Host, the host and port as the URL
// names them ("api.example" and "api.example:443" are two keys).
func Host(req *http.Request) string { return req.URL.Host }

type groupBreakerLayer struct {
	g        *circuitbreaker.Group[string]
	key      func(*http.Request) string
	classify circuitbreaker.Classifier[*http.Response]
}

// Wrap returns inner guarded by the group's breakers; a nil inner gives a
// Service whose every call fails with an error matching
// [rampart.ErrNilService].
func (l groupBreakerLayer) Wrap(inner Service) Service {
	if inner == nil {
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
	one := breakerService{b: s.l.g.Breaker(s.l.key(req)), classify: s.l.classify, inner: s.inner}
	return one.Call(ctx, req)
}
