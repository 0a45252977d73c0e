package ramparthttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/filter"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/timeout"
)

// Exchange is one incoming request and the [http.ResponseWriter] that
// answers it: the request type of a server-side stack. A server request has
// no response value to return (the handler writes it), so the response
// type of the stack is struct{}, and the writer travels with the request.
// Any rampart layer therefore composes in front of a handler: concurrency,
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

// ServerLayer is a layer of a server-side HTTP stack. Besides the
// pre-typed constructors of this package ([ServerConcurrencyLimitLayer],
// [ServerShedLayer], [ServerRateLimitLayer], [ServerKeyedRateLimitLayer],
// [ServerTimeoutLayer]), any rampart layer built with the type arguments
// [Exchange] and struct{} is one:
//
//	f, err := filter.NewAllowLayer[ramparthttp.Exchange, struct{}](allow)
//
// Layers must call the inner service at most once per request and wait
// for it to return: the writer is valid only until ServeHTTP returns. So
// retry and hedge (the handler would answer twice on one writer), coalesce
// (the followers' writers would never be written) and timeout's Abandon
// mode (the handler would outlive ServeHTTP) do not belong in a server
// stack.
type ServerLayer = rampart.Layer[Exchange, struct{}]

// HandlerConfig configures [NewHandler]. The zero HandlerConfig is valid:
// a Handler with no layers passes every request to its handler.
type HandlerConfig struct {
	// Layers is the stack, outermost first, as with [rampart.Builder]:
	// Layers[0] sees each request first. Nil entries are skipped. A
	// typical order is rate limit, load shedding, concurrency limit,
	// timeout.
	Layers []ServerLayer

	// RetryAfter is the wait advertised in the Retry-After header of a 429
	// or 503 answer whose error carries no delay of its own: a
	// concurrency limit or load-shedding refusal, a timeout, a breaker
	// rejected for want of probe slots. It is rounded up to whole seconds.
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
// When the stack returns an error, the Handler calls HandlerConfig.OnError,
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
//     the caller to wait (has a RetryDelay() time.Duration method). A
//     timeout is 503, as [http.TimeoutHandler] answers, rather than 504:
//     504 says an upstream server did not answer a gateway, and here the
//     server itself ran out of time;
//   - 403 Forbidden for a filter's refusal ([filter.ErrRejected]);
//   - 500 Internal Server Error for any other error. Map your own
//     layers' errors, and log the unknown ones, with OnError.
//
// A 429 or 503 carries a Retry-After header (RFC 9110, section 10.2.3) in
// whole seconds, rounded up so that a client never comes back early: the
// error's RetryDelay() when it is positive (a rate limiter's time to the
// next token, a breaker's remaining cool-down), HandlerConfig.RetryAfter
// otherwise, and no header when both are zero or the delay is
// [rate.InfDuration] (a limiter that will never grant a token) or
// [circuitbreaker.Forever] (a breaker held open until reset).
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
	retryAfter time.Duration
	onError    func(w http.ResponseWriter, r *http.Request, err error) bool
}

// NewHandler returns a [Handler] that sends each request through
// cfg.Layers to next. It returns an error when next is nil or a field of
// cfg is invalid, naming it.
func NewHandler(next http.Handler, cfg HandlerConfig) (*Handler, error) {
	if next == nil {
		return nil, errors.New("ramparthttp: next handler must not be nil")
	}
	if cfg.RetryAfter < 0 {
		return nil, fmt.Errorf("ramparthttp: HandlerConfig.RetryAfter must be >= 0 (0 means no Retry-After header unless the error carries a delay), got %v", cfg.RetryAfter)
	}
	b := rampart.NewBuilder[Exchange, struct{}]()
	for _, l := range cfg.Layers {
		b = b.Layer(l)
	}
	return &Handler{
		svc:        b.Service(handlerService{next: next}),
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

// writeError writes the default answer for err, as [Handler] documents.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	code, delay := status(err)
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		if delay == 0 {
			delay = h.retryAfter
		}
		// rate.InfDuration (a limiter that never grants) and
		// circuitbreaker.Forever (held open until reset) say "not by
		// waiting": no Retry-After.
		if delay > 0 && delay != rate.InfDuration && delay != circuitbreaker.Forever {
			w.Header().Set("Retry-After", seconds(delay))
		}
	}
	http.Error(w, http.StatusText(code), code)
}

// retryDelayer is implemented by every rampart error that asks the caller
// to wait: *ratelimit.LimitedError, *concurrency.LimitedError,
// *circuitbreaker.OpenError.
type retryDelayer interface {
	error
	RetryDelay() time.Duration
}

// status returns the status code that answers err and the delay err asks
// the caller to wait (zero when none).
func status(err error) (code int, delay time.Duration) {
	if d, ok := errors.AsType[retryDelayer](err); ok {
		delay = max(d.RetryDelay(), 0)
	}
	switch {
	case errors.Is(err, circuitbreaker.ErrOpen):
		// First: a rejection also matches the failures that tripped the
		// breaker (429s from a rate limit, say), yet it is a 503.
		return http.StatusServiceUnavailable, delay
	case errors.Is(err, ratelimit.ErrLimited):
		return http.StatusTooManyRequests, delay
	case errors.Is(err, concurrency.ErrLimited),
		errors.Is(err, loadshed.ErrOverloaded),
		errors.Is(err, timeout.ErrTimeout),
		errors.Is(err, context.DeadlineExceeded),
		delay > 0:
		return http.StatusServiceUnavailable, delay
	case errors.Is(err, filter.ErrRejected):
		return http.StatusForbidden, 0
	default:
		return http.StatusInternalServerError, 0
	}
}

// seconds formats d as a Retry-After value: whole seconds, rounded up.
func seconds(d time.Duration) string {
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return strconv.FormatInt(int64(s), 10)
}

// handlerService is the innermost service of a Handler's stack: it calls
// the wrapped handler.
type handlerService struct{ next http.Handler }

func (s handlerService) Call(ctx context.Context, x Exchange) (struct{}, error) {
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

// responseWriter records whether the response has begun, so that a Handler
// never writes a second one. It is used by one goroutine at a time, as
// net/http requires of a ResponseWriter.
//
// From the moment the handler is called until the response starts, the
// handler's headers are kept apart from the server's: Header returns a copy
// of the server's header map, made on first use, and the copy is sent as the
// server's headers when the handler writes a status, a body byte, a flush
// or hijacks. So a refusal written after the handler gave up (a timeout)
// carries none of the headers the handler set for the answer it never wrote
// (Content-Encoding, Cache-Control, Set-Cookie), as with
// [http.TimeoutHandler], while headers set before the handler ran, by an
// outer middleware or by a layer of the stack (a request ID, CORS), stay.
// An informational status (103 Early Hints) is sent with the handler's
// headers, which are then taken back from the server's map: it does not
// start the response, and a refusal after it carries none of them either.
// The handler sees one map throughout, as with net/http: trailers it sets
// in that map after the body are copied to the server's map when it
// returns.
type responseWriter struct {
	w http.ResponseWriter
	// h is the handler's header map; nil until the handler first asks for
	// it before the response started.
	h http.Header
	// private is set when the handler is called: before that, Header is
	// the server's map.
	private bool
	// started is set once a final status or body bytes may have reached the
	// client, or the connection was hijacked.
	started bool
	// sealed is set when the stack returned an error after the response
	// began: every later write is discarded.
	sealed bool
}

// errSealed is what writes return after the response was finished.
var errSealed = errors.New("ramparthttp: response already written")

func (w *responseWriter) Header() http.Header {
	if w.h != nil {
		return w.h
	}
	if !w.private || w.started {
		return w.w.Header()
	}
	w.h = w.w.Header().Clone()
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}

// sendHeader makes the handler's headers the server's, before something is
// sent with them.
func (w *responseWriter) sendHeader() {
	if w.h != nil {
		replaceHeader(w.w.Header(), w.h)
	}
}

// replaceHeader makes dst hold exactly src's fields.
func replaceHeader(dst, src http.Header) {
	for k := range dst {
		if _, ok := src[k]; !ok {
			delete(dst, k)
		}
	}
	for k, v := range src {
		dst[k] = v
	}
}

// start marks the response as begun, sending the handler's headers.
func (w *responseWriter) start() {
	if !w.started {
		w.sendHeader()
		w.started = true
	}
}

func (w *responseWriter) WriteHeader(code int) {
	if w.sealed {
		return
	}
	// 101 Switching Protocols is final; every other 1xx (103 Early Hints)
	// precedes the final status and carries the headers set so far.
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.start()
		w.w.WriteHeader(code)
		return
	}
	if w.started || w.h == nil {
		w.w.WriteHeader(code)
		return
	}
	// The server sends its map with the 1xx there and then; lend it the
	// handler's headers for that, and take them back, so that a refusal
	// written if the handler never answers does not carry them.
	saved := w.w.Header().Clone()
	w.sendHeader()
	w.w.WriteHeader(code)
	replaceHeader(w.w.Header(), saved)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.sealed {
		return 0, errSealed
	}
	w.start()
	return w.w.Write(p)
}

// ReadFrom keeps the server's sendfile path (io.Copy into a ResponseWriter).
func (w *responseWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.sealed {
		return 0, errSealed
	}
	w.start()
	return io.Copy(w.w, src)
}

// FlushError is what [http.ResponseController.Flush] calls.
func (w *responseWriter) FlushError() error {
	if w.sealed {
		return errSealed
	}
	rc := http.NewResponseController(w.w)
	if w.started || w.h == nil {
		if err := rc.Flush(); err != nil {
			return err
		}
		w.started = true
		return nil
	}
	saved := w.w.Header().Clone()
	w.sendHeader()
	if err := rc.Flush(); err != nil {
		replaceHeader(w.w.Header(), saved) // nothing was sent
		return err
	}
	w.start()
	return nil
}

func (w *responseWriter) Flush() { _ = w.FlushError() }

func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.sealed {
		return nil, nil, errSealed
	}
	conn, brw, err := http.NewResponseController(w.w).Hijack()
	if err == nil {
		w.start()
	}
	return conn, brw, err
}

// Unwrap lets [http.ResponseController] reach the server's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.w }

// ServerConcurrencyLimitLayer returns a layer that runs each request in a
// slot of lim, so at most lim.Max() handlers run at once across every
// layer built with lim. It is [concurrency.NewLayer] for a server stack.
// In [concurrency.Reject] mode a request finding every slot taken is
// refused at once with a [*concurrency.LimitedError] (answered 503); in
// [concurrency.Wait] mode it queues until a slot frees or its context is
// done. Put [ServerShedLayer] with the same lim outside a Wait layer to
// refuse instead of queueing. It returns an error when lim is nil or mode
// is invalid.
func ServerConcurrencyLimitLayer(lim *concurrency.Limiter, mode concurrency.Mode) (ServerLayer, error) {
	return concurrency.NewLayer[Exchange, struct{}](lim, mode)
}

// ServerShedLayer returns a layer that refuses a request with
// [loadshed.ErrOverloaded] (answered 503) when r is not ready, for example
// a *concurrency.Limiter with no free slot. It is [loadshed.NewLayer] for a
// server stack. It returns an error when r is nil.
func ServerShedLayer(r loadshed.Readiness) (ServerLayer, error) {
	return loadshed.NewLayer[Exchange, struct{}](r)
}

// ServerRateLimitLayer returns a layer that takes a token from lim before
// each request. It is [ratelimit.NewLayer] for a server stack: a refusal is
// a [*ratelimit.LimitedError], answered 429 with a Retry-After header
// saying when the next token is due. It returns an error when lim is nil
// or mode is invalid.
func ServerRateLimitLayer(lim *rate.Limiter, mode ratelimit.Mode) (ServerLayer, error) {
	return ratelimit.NewLayer[Exchange, struct{}](lim, mode)
}

// ServerKeyedRateLimitLayer returns a layer that takes a token, before each
// request, from the limiter k holds for key(r): per client address, per
// API key, per tenant. It is [ratelimit.NewKeyedLayer] for a server stack,
// answered as [ServerRateLimitLayer] is. key must be safe for concurrent
// use. It returns an error when k or key is nil or mode is invalid.
func ServerKeyedRateLimitLayer(k *ratelimit.Keyed, key func(r *http.Request) string, mode ratelimit.Mode) (ServerLayer, error) {
	if key == nil {
		return nil, errors.New("ramparthttp: key must not be nil")
	}
	return ratelimit.NewKeyedLayer[Exchange, struct{}](k, func(x Exchange) string { return key(x.Request) }, mode)
}

// ServerTimeoutLayer returns a layer that gives each request's handler a
// context with a deadline d after the request enters the layer. It is
// [timeout.NewLayer] for a server stack. A handler that returns without
// answering once its context is done gets a 503 answer (see [Handler]); a
// handler that answers, even late, keeps its answer. The handler must
// honour its context: the layer runs it on the request's goroutine and
// waits for it (timeout's Abandon mode must not be used in a server stack,
// since an abandoned handler would write after ServeHTTP returned). d must
// be > 0, otherwise ServerTimeoutLayer returns an error naming it.
func ServerTimeoutLayer(d time.Duration) (ServerLayer, error) {
	return timeout.NewLayer[Exchange, struct{}](d)
}
