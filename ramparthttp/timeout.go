package ramparthttp

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/timeout"
)

// TimeoutLayer returns a layer that gives each request a deadline d after it
// is sent. The deadline covers reading the response body too, as
// [http.Client.Timeout] does: the layer does not cancel the request's
// context when the response arrives, but when its body is closed (or at the
// deadline), so a caller can read a successful response to the end. A
// request that runs out of time fails with an error matching both
// [timeout.ErrTimeout] and [context.DeadlineExceeded]; the caller's own
// deadline or cancellation is reported as the caller's. An upgraded
// connection (the body of a 101 Switching Protocols response) is the
// caller's once returned: the deadline does not end it. d must be > 0,
// otherwise TimeoutLayer returns an error naming it.
func TimeoutLayer(d time.Duration) (Layer, error) {
	return timeout.NewLayer(timeout.Config[*http.Request, *http.Response]{Timeout: d, Detach: cancelOnClose})
}

// HeaderTimeoutLayer returns a layer that bounds the time from sending each
// request until its response headers arrive to d, as
// [http.Transport.ResponseHeaderTimeout] does, but per attempt, through the
// stack, and whatever the base RoundTripper. Once the headers have arrived
// the limit no longer applies: reading the body takes as long as it takes
// (bound it with [TimeoutLayer], the caller's context or
// [http.Client.Timeout]). So a slow but healthy download is not cut short,
// and, under a breaker, not counted as a failure, while a server that
// accepts the request and never answers is.
//
// An attempt whose headers have not arrived d after it was sent is
// cancelled and fails with a [*timeout.Error] (After is d), which matches
// [timeout.ErrTimeout] and [context.DeadlineExceeded] and whose Timeout
// method reports true: the breaker counts it as a failure and the retry
// layer retries it, as it does any attempt timeout. The limit is judged by
// the layer's timer: a response that arrives as the timer fires has its
// body closed and the attempt is a timeout, since the cancellation may
// already have reached the body. The caller's own deadline or cancellation
// is reported as the caller's, never as a timeout of this layer.
//
// Which to use: HeaderTimeoutLayer when responses may be large or streamed
// (downloads, long polls, server-sent events) and the server's time to
// answer is what says whether it is healthy; [TimeoutLayer] when the whole
// exchange, body included, must end within a bound. Both may be used
// together, the header timeout being the shorter.
//
// Each call allocates a cancellable context, its timer and the wrapper of
// the response body that ends the context when the body is closed. d must
// be > 0, otherwise HeaderTimeoutLayer returns an error naming it. The
// layer is safe for concurrent use.
func HeaderTimeoutLayer(d time.Duration) (Layer, error) {
	if d <= 0 {
		return nil, fmt.Errorf("ramparthttp: header timeout must be > 0, got %v", d)
	}
	return headerTimeoutLayer{cause: &timeout.Error{After: d}}, nil
}

type headerTimeoutLayer struct {
	// cause is the cause of every context the layer cancels at its limit,
	// shared by the calls; After is the limit.
	cause *timeout.Error
}

// Wrap returns inner with the header timeout; a nil inner gives a Service
// whose every call fails with an error matching [rampart.ErrNilService].
func (l headerTimeoutLayer) Wrap(inner Service) Service {
	if nilservice.Is(inner) {
		return rampart.Failing[*http.Request, *http.Response]("ramparthttp: HeaderTimeoutLayer: Wrap")
	}
	return headerTimeoutService{cause: l.cause, inner: inner}
}

type headerTimeoutService struct {
	cause *timeout.Error
	inner Service
}

func (s headerTimeoutService) Call(ctx context.Context, req *http.Request) (*http.Response, error) {
	hctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(s.cause.After, func() { cancel(s.cause) })
	resp, err := s.inner.Call(hctx, req)
	if t.Stop() {
		if err != nil {
			cancel(nil)
			return resp, err
		}
		// The headers came in time: the body may take as long as it needs,
		// and the context lives until the body is closed.
		return cancelCauseOnClose(resp, cancel), nil
	}
	// The timer fired: the context is cancelled, or about to be.
	cancel(s.cause)
	if resp != nil {
		discard(resp)
	}
	if ctx.Err() != nil {
		// The caller gave up too: the outcome is the caller's.
		if err == nil {
			err = context.Cause(ctx)
		}
		return nil, err
	}
	if err == error(s.cause) {
		err = nil // the transport reported the cancellation's cause itself
	}
	return nil, &timeout.Error{After: s.cause.After, Err: err}
}
