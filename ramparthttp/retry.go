package ramparthttp

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/retry"
)

// RetryConfig configures [RetryLayer]. Every zero field takes the default of
// the matching [retry.Config] field.
type RetryConfig struct {
	// MaxAttempts bounds the attempts per request, including the first: 3
	// means one request and at most two retries. Zero means
	// [retry.DefaultMaxAttempts]; 1 disables retries; negative is an error.
	MaxAttempts int
	// Backoff gives the delay before each retry; nil means retry's default
	// exponential backoff with full jitter.
	Backoff retry.Backoff
	// Budget bounds retries to a share of recent requests (a
	// *budget.Budget, shared by every client of the same dependency). Every
	// request deposits, retried or not. Nil means a budget of the layer's
	// own with package budget's defaults (20% of recent requests plus 10
	// retries a second); [budget.Always] means no budget, bounded only by
	// MaxAttempts.
	Budget retry.Budget
	// MaxHint caps the delay a Retry-After header may ask for; zero means
	// [retry.DefaultMaxHint] (a minute). A longer Retry-After is shortened to
	// MaxHint, not obeyed: the request is retried after MaxHint, sooner than
	// the server asked. A number of seconds too large to represent is such a
	// longer one, never a malformed header. Give requests a deadline, and a
	// Retry-After that lands past it ends the retries at once with the
	// response.
	MaxHint time.Duration
	// Retryable reports whether an attempt's outcome is worth retrying:
	// its response, or the error the transport (or a layer below) returned.
	// Nil means [Retryable]: a transport error, 429, and 5xx except 501 and
	// 505. Whatever it returns, an open breaker, the caller's cancellation
	// and a request that may not be sent twice are never retried. It must
	// be safe for concurrent use.
	Retryable func(resp *http.Response, err error) bool
	// RetryNonIdempotent allows retrying requests whose method is not
	// idempotent (POST, PATCH) even without an Idempotency-Key header. Only
	// set it when the server deduplicates requests some other way.
	RetryNonIdempotent bool
	// Name names the retry layer in its events; see [retry.Config].
	Name string
	// Observer, if not nil, is told about each retry and the end of each
	// loop that retried, as [retry.Config] says.
	Observer observe.Observer
}

// RetryLayer returns a layer that retries requests whose attempt
// cfg.Retryable judges worth retrying (by default [Retryable]: a transport
// error, 429, or 5xx except 501 and 505), within cfg's attempts and budget,
// honouring Retry-After on 429 and 503 responses. Only requests that may
// be sent again
// are retried: an idempotent method (RFC 9110: GET, HEAD, OPTIONS, TRACE,
// PUT, DELETE), an Idempotency-Key header, or cfg.RetryNonIdempotent; and a
// body that can be replayed (none, or [http.Request.GetBody] set). Every
// attempt sends a fresh copy of the body from GetBody. A response that is
// retried has its body closed (read to its end first only when it declares
// at most 4 KiB, and for at most 10 ms).
//
// Never retried, as in package retry: an open breaker (returned as it is),
// the caller's cancellation, a request whose context says it is already a
// retry at the hop that sent it ([rampart.AttemptOf] above 1). Nor is a
// 429 or 503 answer that carries [NoRetryHeader] "no", whatever
// cfg.Retryable says. When the attempts run out on a failing
// response, that last response is returned with a nil error; when they run
// out on an error, the error is a [*retry.ExhaustedError] that wraps the
// last attempt's error. A bad cfg is an error naming the field.
func RetryLayer(cfg RetryConfig) (Layer, error) {
	if cfg.Retryable == nil {
		cfg.Retryable = Retryable
	}
	cfg.Retryable = obeyNoRetry(cfg.Retryable)
	if cfg.Budget == nil {
		// One default budget for the retry loop and for the requests sent
		// once, which earn retries for the others.
		b, err := budget.New(budget.Config{})
		if err != nil {
			return nil, fmt.Errorf("ramparthttp: the default Retry.Budget: %w", err)
		}
		cfg.Budget = b
	}
	l, err := retry.NewLayer(retry.Config[*http.Request, *http.Response]{
		MaxAttempts: cfg.MaxAttempts,
		Backoff:     cfg.Backoff,
		Retryable:   cfg.Retryable,
		Budget:      cfg.Budget,
		Hint:        hint,
		MaxHint:     cfg.MaxHint,
		Discard:     discard,
		Name:        cfg.Name,
		Observer:    cfg.Observer,
	})
	if err != nil {
		return nil, err
	}
	return retryLayer{retry: l, budget: cfg.Budget, anyMethod: cfg.RetryNonIdempotent}, nil
}

type retryLayer struct {
	retry     Layer
	budget    retry.Budget
	anyMethod bool
}

// Wrap returns inner with retries; a nil inner gives a Service whose
// every call fails with an error matching [rampart.ErrNilService].
func (l retryLayer) Wrap(inner Service) Service {
	if nilservice.Is(inner) {
		return rampart.Failing[*http.Request, *http.Response]("ramparthttp: RetryLayer: Wrap")
	}
	return &resendService{
		once:      inner,
		many:      l.retry.Wrap(replayBody{inner}),
		budget:    l.budget,
		anyMethod: l.anyMethod,
	}
}

// resendService sends a request that may be sent more than once through
// many (the retry or hedge stack over replayBody), and any other once,
// depositing into budget, if set, so that a request sent once still earns
// retries for the others.
type resendService struct {
	once      Service // for requests that must not be sent twice
	many      Service
	budget    retry.Budget
	anyMethod bool
}

func (s *resendService) Call(ctx context.Context, req *http.Request) (*http.Response, error) {
	if !resendable(req, s.anyMethod) {
		if s.budget != nil {
			s.budget.Deposit()
		}
		return s.once.Call(ctx, req)
	}
	if hasBody(req) {
		// Every attempt or copy sends its own body from GetBody (two
		// goroutines never share one); the original is never read, so it
		// is closed here as the transport would have.
		_ = req.Body.Close()
	}
	return s.many.Call(ctx, req)
}

// resendable reports whether req may be sent more than once: its body can
// be produced again (none, or GetBody set), and its method is idempotent,
// it carries an Idempotency-Key header, or anyMethod allows every method.
func resendable(req *http.Request, anyMethod bool) bool {
	if hasBody(req) && req.GetBody == nil {
		return false
	}
	return anyMethod || idempotent(req.Method) || req.Header.Get("Idempotency-Key") != ""
}

func idempotent(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func hasBody(req *http.Request) bool { return req.Body != nil && req.Body != http.NoBody }

// replayBody sends each attempt with a fresh body from GetBody.
type replayBody struct{ inner Service }

func (s replayBody) Call(ctx context.Context, req *http.Request) (*http.Response, error) {
	if !hasBody(req) {
		return s.inner.Call(ctx, req)
	}
	body, err := req.GetBody()
	if err != nil {
		// The body cannot be produced again; another attempt cannot help.
		return nil, retry.Permanent(err)
	}
	r := req.WithContext(ctx)
	r.Body = body
	return s.inner.Call(ctx, r)
}

// hint reads Retry-After on the responses where RFC 9110 gives it a meaning
// for a retry: 429 and 503.
func hint(resp *http.Response, _ error) (time.Duration, bool) {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return 0, false
	}
	return retryAfter(resp.Header)
}

var _ rampart.Layer[*http.Request, *http.Response] = retryLayer{}
