package ramparthttp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rampart-go/rampart"
)

// Exchange is one incoming request and the [http.ResponseWriter] that
// answers it: the request type of a server-side stack. A server request has
// no response value to return (the handler writes it), so the response
// type of the stack is struct{}, and the writer travels with the request.
// Any rampart layer therefore composes in front of a handler: limit,
// loadshed, ratelimit, timeout, filter.
//
// A layer that wants to change the writer or the request (to wrap the
// writer, or to add a value to the request's context) sets the field in its
// copy of the Exchange, rather than building a new one, so that the
// [Handler] can still tell whether the response has begun:
//
//	x.Request = x.Request.WithContext(ctx)
//	return inner.Call(ctx, x)
//
// The innermost service calls the handler with the context the stack
// passes down (a timeout layer's, say), not the request's own.
type Exchange struct {
	// Writer answers the request. It is valid only until the Handler's
	// ServeHTTP returns, as any ResponseWriter is.
	Writer http.ResponseWriter
	// Request is the incoming request.
	Request *http.Request

	// rw tracks what reached the client; nil in an Exchange made outside
	// a Handler.
	rw *responseWriter
}

// ServerService is a server-side HTTP service, as the stack of a [Handler]
// sees it. Its Call returns a nil error once the handler has answered.
type ServerService = rampart.Service[Exchange, struct{}]

// ServerLayer is a layer of a server-side HTTP stack: any rampart layer
// built with the type arguments [Exchange] and struct{}, such as
//
//	lim, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
//	rl, err := ratelimit.NewKeyedLayer[ramparthttp.Exchange, struct{}](k, ramparthttp.KeyPeer, ratelimit.Refuse)
//	to, err := timeout.NewLayer(timeout.Config[ramparthttp.Exchange, struct{}]{Timeout: 2 * time.Second})
//
// Layers must call the inner service at most once per request and wait
// for it to return: the writer is valid only until ServeHTTP returns. So
// retry and hedge (the handler would answer twice on one writer), coalesce
// (the followers' writers would never be written) and timeout's Abandon
// mode (the handler would outlive ServeHTTP) do not belong in a server
// stack.
//
// A circuit breaker layer here (circuitbreaker.NewLayer over Exchange)
// judges each request by the error the stack below it returns, not by
// the status the handler wrote: a handler that answers, with a 500 as
// with a 200, returns a nil error, and the breaker counts a success. Only
// an error counts as a failure: a timeout layer below the breaker ending
// a handler that then returned without answering, or a layer below
// refusing the request; a client that went away is ignored, as a
// breaker ignores its caller's cancellation. So such a breaker sheds
// load when the server's own layers time out, not when the handler's
// answers are errors.
type ServerLayer = rampart.Layer[Exchange, struct{}]

// ServerConfig configures [NewHandler]. The zero ServerConfig is valid:
// a Handler with no layers passes every request to its handler.
// rampartgrpc.ServerConfig is its counterpart for gRPC.
type ServerConfig struct {
	// Layers is the stack, outermost first, as with [rampart.Builder]:
	// Layers[0] sees each request first. Nil entries are skipped. A
	// typical order is rate limit, load shedding, concurrency limit,
	// timeout. A timeout layer's handler must honour its context: the
	// layer runs it on the request's goroutine and waits for it, and a
	// handler that returns without answering once its context is done gets
	// a 503 answer (timeout's Abandon mode must not be used here, since an
	// abandoned handler would write after ServeHTTP returned).
	Layers []ServerLayer

	// Skip, if not nil, reports whether a request bypasses the layers and
	// goes straight to the handler: health checks and readiness probes,
	// which must be answered while the server refuses other load. It must
	// be safe for concurrent use.
	Skip func(r *http.Request) bool

	// RetryAfter is the wait advertised in the Retry-After header of a 429
	// or 503 answer whose error carries no delay of its own: a
	// concurrency limit or load-shedding refusal, a timeout, a breaker
	// refused for want of probe slots. It is rounded up to whole seconds.
	// Zero means such answers have no Retry-After header. It must not be
	// negative.
	RetryAfter time.Duration

	// OnError, when non-nil, is called with every error the stack returns,
	// before the Handler writes its default answer, on the request's
	// goroutine. It may answer the request itself with w and return true,
	// or return false to let the Handler write its default answer (after
	// logging the error, say, or to leave errors it does not know to the
	// default). If the response had already begun when the error arrived
	// (see [Handler]), whatever it writes to w is discarded. It must be
	// safe for concurrent use.
	OnError func(w http.ResponseWriter, r *http.Request, err error) (handled bool)
}

// Handler is an [http.Handler] that sends each request through a stack of
// server layers to the handler it wraps, and answers the requests a layer
// refuses with a proper status instead of a bare 500. Build it with
// [NewHandler]; the zero Handler (and a nil *Handler), which wraps no
// handler, answers every request 500 Internal Server Error. It is safe for
// concurrent use and starts no goroutine.
//
// # Answers
//
// When the stack returns an error, the Handler calls ServerConfig.OnError,
// if set. Unless OnError handled the error, and provided nothing has been
// written to the response yet, the Handler answers with the status text as
// body and:
//
//   - 429 Too Many Requests for a rate-limit refusal
//     ([ratelimit.ErrLimited]);
//   - 503 Service Unavailable for a concurrency limit or load-shedding
//     refusal ([concurrency.ErrLimited], [loadshed.ErrOverloaded]), an open
//     breaker ([circuitbreaker.ErrOpen]), a timeout ([timeout.ErrTimeout],
//     or any [context.DeadlineExceeded]), and any other error that asks
//     the caller to wait (has a RetryAfter() time.Duration method). A
//     timeout is 503, as [http.TimeoutHandler] answers, rather than 504:
//     504 says an upstream server did not answer a gateway, and here the
//     server itself ran out of time;
//   - 403 Forbidden for a filter's refusal ([filter.ErrRefused]);
//   - 500 Internal Server Error for any other error. Map your own
//     layers' errors, and log the unknown ones, with OnError.
//
// A 429 or 503 carries a Retry-After header (RFC 9110, section 10.2.3) in
// whole seconds, rounded up so that a client never comes back early: the
// error's RetryAfter() when it is positive (a rate limiter's time to the
// next token, a breaker's remaining cool-down), ServerConfig.RetryAfter
// otherwise, and no header when both are zero or the delay is
// [rate.InfDuration] (a limiter that will never grant a token) or
// [rampart.Forever] (a breaker held open until reset).
//
// When the request's own context is done (the client went away, or a
// server's base context was cancelled), nobody reads the answer: the
// Handler writes the bare status 503, with no body and no Retry-After, so
// that a logging middleware outside does not record an implicit 200.
//
// # Responses already begun
//
// The Handler never writes a second response. Once the handler has written
// a final status or any body, flushed, or hijacked the connection, an error
// the stack returns afterwards still goes to OnError, but nothing more is
// written to the client. And when the handler returns without writing
// anything after the context it was given is done (a timeout layer's
// deadline passed), the innermost service reports that context's error,
// so the stack answers 503 rather than an empty 200. Such a refusal carries
// the headers set outside the handler (by an outer middleware or a layer of
// the stack) and none of those the handler set for the answer it never
// wrote (Content-Encoding, Set-Cookie), even when it sent an informational
// status (103 Early Hints) with them.
//
// The writer the handler receives implements [http.Flusher] and
// [http.Hijacker] by delegating to the server's writer (returning an error
// wrapping [http.ErrNotSupported] when it cannot), [io.ReaderFrom], and
// Unwrap, so [http.ResponseController] reaches the server's writer for
// deadlines and full duplex.
//
// # Cost
//
// Each request allocates the writer wrapper (one small object), plus one
// request copy when a layer changed the context (a timeout layer).
// Refusals allocate what writing the answer allocates.
type Handler struct {
	svc        ServerService
	next       http.Handler
	skip       func(*http.Request) bool
	retryAfter time.Duration
	onError    func(w http.ResponseWriter, r *http.Request, err error) bool
}

// NewHandler returns a [Handler] that sends each request through
// cfg.Layers to next. It returns an error when next is nil or a field of
// cfg is invalid, naming it.
func NewHandler(next http.Handler, cfg ServerConfig) (*Handler, error) {
	if next == nil {
		return nil, errors.New("ramparthttp: next handler must not be nil")
	}
	if cfg.RetryAfter < 0 {
		return nil, fmt.Errorf("ramparthttp: ServerConfig.RetryAfter must be >= 0 (0 means no Retry-After header unless the error carries a delay), got %v", cfg.RetryAfter)
	}
	b := rampart.NewBuilder[Exchange, struct{}]()
	for _, l := range cfg.Layers {
		b = b.Layer(l)
	}
	return &Handler{
		svc:        b.Service(&handlerService{next: next}),
		next:       next,
		skip:       cfg.Skip,
		retryAfter: cfg.RetryAfter,
		onError:    cfg.OnError,
	}, nil
}

// ServeHTTP sends the request through the stack; [Handler] documents the
// answers.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h == nil || h.svc == nil {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	if h.skip != nil && h.skip(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	rw := &responseWriter{w: w}
	_, err := h.svc.Call(r.Context(), Exchange{Writer: rw, Request: r, rw: rw})
	// The stack has returned, so the handler is done with rw: from here on
	// only this goroutine touches it.
	if err == nil || rw.started {
		// The handler's headers: those of the 200 net/http writes for a
		// handler that wrote nothing, or the trailers of its answer.
		rw.sendHeader()
	}
	if err == nil {
		return
	}
	rw.sealed = rw.started
	if !rw.started {
		rw.h = nil // the handler's headers were for an answer it never wrote
	}
	if h.onError != nil && h.onError(rw, r, err) {
		return
	}
	if !rw.started {
		h.writeError(rw, r, err)
	}
}

// handlerService is the innermost service of a Handler's stack: it calls
// the wrapped handler. (A pointer, so that the call through the Service
// interface needs no wrapper copying the value.)
type handlerService struct{ next http.Handler }

func (s *handlerService) Call(ctx context.Context, x Exchange) (struct{}, error) {
	r := x.Request
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	if x.rw != nil {
		x.rw.private = true // headers set from here on belong to the handler's answer
	}
	s.next.ServeHTTP(x.Writer, r)
	if err := ctx.Err(); err != nil && (x.rw == nil || !x.rw.started) {
		// The handler gave up without answering because its context is
		// done; report why, so the stack answers instead of an empty 200.
		return struct{}{}, err
	}
	return struct{}{}, nil
}

// KeyPeer is a key function for a per-client rate limit
// ([ratelimit.NewKeyedLayer] over [Exchange]): the host of the request's
// RemoteAddr, without its port, so that a client's connections share one
// key; the whole RemoteAddr when it has no port. It is the peer's address
// as the server sees it: behind a proxy, key by a header the proxy sets
// with [KeyHeader] instead. rampartgrpc.KeyPeer is its gRPC counterpart.
func KeyPeer(x Exchange) string {
	if x.Request == nil {
		return ""
	}
	a := x.Request.RemoteAddr
	if host, _, err := net.SplitHostPort(a); err == nil {
		return host
	}
	return a
}

// KeyHeader returns a key function for a per-key rate limit
// ([ratelimit.NewKeyedLayer] over [Exchange]) that reads the request's
// header name (its first value; "" when there is none): an API key, a
// tenant, or the client address a trusted proxy sets. Names are
// case-insensitive, as HTTP header names are. The function is safe for
// concurrent use. rampartgrpc.KeyMetadata is its gRPC counterpart.
func KeyHeader(name string) func(Exchange) string {
	name = http.CanonicalHeaderKey(name)
	return func(x Exchange) string {
		if x.Request == nil {
			return ""
		}
		if vs := x.Request.Header[name]; len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
}
