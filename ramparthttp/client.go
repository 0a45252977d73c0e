package ramparthttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/rampart-go/rampart"
)

// Service is a client-side HTTP service: one request, one response. A
// Service built by this package follows the [http.RoundTripper] contract: it
// returns a response or an error, never both.
type Service = rampart.Service[*http.Request, *http.Response]

// Layer is a layer of a client-side HTTP stack.
type Layer = rampart.Layer[*http.Request, *http.Response]

// NewBuilder returns an empty builder for a client-side HTTP stack, so that
// HTTP users need no type parameters. As with every rampart Builder, the
// first layer added is the outermost.
func NewBuilder() rampart.Builder[*http.Request, *http.Response] {
	return rampart.NewBuilder[*http.Request, *http.Response]()
}

// FromRoundTripper returns a [Service] that sends each request with rt; a nil
// rt means [http.DefaultTransport]. The request is sent with the context the
// Service is called with (the one a timeout layer derived, say), not the
// request's own. It is the innermost service of a stack and is safe for
// concurrent use when rt is. It holds rt to its contract, so the layers
// above it can rely on it: a RoundTripper that returns neither a response
// nor an error gets an error, and one that returns both has the response
// closed and only the error kept.
func FromRoundTripper(rt http.RoundTripper) Service {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripperService{rt: rt}
}

type roundTripperService struct{ rt http.RoundTripper }

func (s roundTripperService) Call(ctx context.Context, req *http.Request) (*http.Response, error) {
	var a *attempt
	if ctx != req.Context() {
		// The copy that carries ctx, in one allocation with the wrapper
		// of the response body, which the layer that made ctx (a
		// timeout's, a hedge's) needs to end it. (WithContext is inlined
		// and its own copy does not escape.)
		a = new(attempt)
		a.req = *req.WithContext(ctx)
		req = &a.req
	}
	resp, err := s.rt.RoundTrip(req)
	switch {
	case err != nil && resp != nil:
		// Against the RoundTripper contract; keep the error.
		discard(resp)
		return nil, err
	case err == nil && resp == nil:
		return nil, fmt.Errorf("ramparthttp: %T returned a nil *http.Response with a nil error", s.rt)
	}
	if a != nil && err == nil && !noBody(resp) {
		wrapIn(&a.body, resp)
	}
	return resp, err
}

// NewRoundTripper returns an [http.RoundTripper] that sends every request
// through svc with the request's context; put it in an [http.Client]'s
// Transport field. Build svc with [NewBuilder] on top of [FromRoundTripper].
//
// The RoundTripper keeps net/http's contract whatever the layers do: it
// returns a response or an error, never both (a response that arrives
// alongside an error has its body closed), and it closes the
// request body when the stack fails without sending it (a breaker
// refusal, say). Errors from the stack reach the caller unchanged; an
// [http.Client] wraps them in a *url.Error, which [errors.Is] and
// [errors.As] see through. It is safe for concurrent use when svc is. A
// nil svc gives a RoundTripper whose every request fails with an error
// matching [rampart.ErrNilService].
func NewRoundTripper(svc Service) http.RoundTripper {
	if svc == nil {
		svc = rampart.Failing[*http.Request, *http.Response]("ramparthttp: NewRoundTripper")
	}
	return roundTripper{svc: svc}
}

type roundTripper struct{ svc Service }

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.svc.Call(req.Context(), req)
	if err != nil {
		if resp != nil {
			discard(resp)
		}
		if req.Body != nil {
			// The transport closes the body when it sends the request;
			// closing it again here covers stacks that failed before
			// sending. net/http request bodies tolerate a second Close,
			// and net/http's own client does the same on errors.
			_ = req.Body.Close()
		}
		return nil, err
	}
	unwrapIdle(resp)
	return resp, nil
}

// maxDrain is the largest declared body that discard reads to the end.
const maxDrain = 4 << 10

// drainTimeout bounds how long discard reads a body before closing it.
const drainTimeout = 10 * time.Millisecond

// discard closes the body of a response nobody will read. A body that
// declares a small length (at most maxDrain bytes, the common short error
// page) is read to its end first, so its HTTP/1 connection can be reused,
// but for at most drainTimeout: such a body has most likely arrived with
// the headers, and one that has not by then is closed while the read is
// in progress, which ends the read (net/http's bodies allow Close during a
// Read). So a server that declares a short body and stalls cannot hold up
// the retry (or the hedge's answer), with or without an attempt timeout.
// Any other body is closed unread. net/http closes an HTTP/1 connection
// whose body was not read to the end, and resets an HTTP/2 stream; both
// happen only on the failure path, which is also the only path that pays
// for the timer.
func discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	body := resp.Body
	if n := resp.ContentLength; n > 0 && n <= maxDrain {
		closed := make(chan struct{})
		t := time.AfterFunc(drainTimeout, func() {
			_ = body.Close()
			close(closed)
		})
		_, _ = io.CopyN(io.Discard, body, n+1)
		if !t.Stop() {
			<-closed // the timer closed the body; return once it is closed
			return
		}
	}
	_ = body.Close()
}
