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

// BreakerLayer returns a layer that guards requests with b, judging each
// attempt with [Classify]; it is [ClassifiedBreakerLayer] with a nil
// classifier.
func BreakerLayer(b *circuitbreaker.Breaker) Layer {
	return ClassifiedBreakerLayer(b, nil)
}

// ClassifiedBreakerLayer returns a layer that guards requests with b, and
// classify judges each attempt for b; nil means [Classify]:
//   - an error returned after the caller cancelled the request's context is
//     ignored without asking classify (the caller gave up);
//   - any other error is judged by classify; an error it judges a failure
//     is then given to [circuitbreaker.Config.IsFailure], which may still
//     count it as a success;
//   - a response judged a failure counts as one, with
//     [circuitbreaker.ErrBadResponse] as its cause; one judged
//     [circuitbreaker.Ignored] counts neither way (a 429 by default);
//   - a response judged a success is judged again by its body: a body read
//     to its end, or closed by the caller before its end, is a success; a
//     body whose read fails (the server stalled past the attempt's timeout,
//     or reset the connection) is a failure, judged as a transport error is.
//     So a server that sends good headers and then hangs still trips the
//     breaker.
//
// An outcome classify returns that is none of Success, Failure and Ignored
// counts as a failure. classify must be safe for concurrent use.
//
// A rejected request is not sent, and fails with an
// [*circuitbreaker.OpenError] that matches [circuitbreaker.ErrOpen].
// Responses, failures included, are returned unchanged but for the body
// wrapper. While a response's body is open its call holds its permit: in
// HalfOpen a probe slot is freed when the body is closed (or after the
// breaker's ProbeLease, if it never is). Layers from the same b share its
// state. A panic in the call, in classify or in the breaker's IsFailure is
// recorded as the failure [circuitbreaker.ErrPanicked] and continues. A nil
// b gives a layer whose every call fails with an error naming it.
func ClassifiedBreakerLayer(b *circuitbreaker.Breaker, classify circuitbreaker.Classifier[*http.Response]) Layer {
	if classify == nil {
		classify = Classify
	}
	return breakerLayer{b: b, classify: classify}
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
	if l.b == nil {
		return circuitbreaker.NewLayer[*http.Request, *http.Response](nil, nil).Wrap(inner)
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
	case err != nil && circuitbreaker.ClassifyContext(ctx, err) == circuitbreaker.Ignored:
		j.p.Ignore() // the caller gave up: classify is not asked
	case err != nil:
		switch s.classify(resp, err) {
		case circuitbreaker.Success:
			j.p.Success()
		case circuitbreaker.Ignored:
			j.p.Ignore()
		default:
			j.p.DoneContext(ctx, err) // a failure, unless IsFailure says not
		}
	default:
		switch s.classify(resp, nil) {
		case circuitbreaker.Success:
			j.judgeBody(resp)
		case circuitbreaker.Ignored:
			j.p.Ignore()
		default:
			j.p.Failure(circuitbreaker.ErrBadResponse)
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

// Host is the default key of [GroupBreakerLayer] and of
// [Config.HostBreakers]: req.URL.Host, the host and port as the URL names
// them ("api.example" and "api.example:443" are two keys).
func Host(req *http.Request) string { return req.URL.Host }

// GroupBreakerLayer returns a layer that guards each request with the
// breaker g holds for key(req), created on demand, so that each endpoint
// has its own breaker: one bad host among many trips only its own, and
// requests to the others go on (the models are Envoy's outlier detection
// and Finagle's per-endpoint failure accrual). A nil key means [Host].
// Each request is judged exactly as by [ClassifiedBreakerLayer] over its
// key's breaker, with classify (nil means [Classify]), the body included,
// and a rejection is that breaker's [*circuitbreaker.OpenError]. A request
// whose context is already done fails with the context's error without
// looking up its key. [circuitbreaker.Group] says how many breakers the
// group holds and when it drops them, and [circuitbreaker.Group.States]
// lists them for a status page.
//
// key must be safe for concurrent use and must not panic. A nil g gives a
// layer whose every call fails with an error matching
// [rampart.ErrNilService] that names it.
func GroupBreakerLayer(g *circuitbreaker.Group[string], key func(*http.Request) string, classify circuitbreaker.Classifier[*http.Response]) Layer {
	if key == nil {
		key = Host
	}
	if classify == nil {
		classify = Classify
	}
	return groupBreakerLayer{g: g, key: key, classify: classify}
}

type groupBreakerLayer struct {
	g        *circuitbreaker.Group[string]
	key      func(*http.Request) string
	classify circuitbreaker.Classifier[*http.Response]
}

// Wrap returns inner guarded by the group's breakers; a nil inner, or a
// nil group, gives a Service whose every call fails with an error matching
// [rampart.ErrNilService].
func (l groupBreakerLayer) Wrap(inner Service) Service {
	switch {
	case inner == nil:
		return rampart.Failing[*http.Request, *http.Response]("ramparthttp: GroupBreakerLayer: Wrap")
	case l.g == nil:
		return rampart.Failing[*http.Request, *http.Response]("ramparthttp: GroupBreakerLayer: nil *circuitbreaker.Group")
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
