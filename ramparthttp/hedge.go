package ramparthttp

import (
	"net/http"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/observe"
)

// HedgeConfig configures [HedgeLayer]. Budget is required; every other zero
// field takes the default of the matching [hedge.Config] field: one hedge
// ([hedge.DefaultMaxAttempts] 2) after a fixed [hedge.DefaultDelay].
type HedgeConfig struct {
	// Budget bounds the hedges to a share of recent requests: every request
	// that may be hedged deposits, every hedge withdraws. A *budget.Budget
	// (package budget, after Finagle's RetryBudget) satisfies it; give the
	// hedge layer its own, apart from the retry layer's. Required: nil, or
	// a nil pointer such as a nil *budget.Budget, is an error. To hedge
	// without a bound, pass budget.Always.
	Budget hedge.Budget
	// MaxAttempts is how many copies of a request may be sent in total,
	// the original included: 2 means at most one hedge. Between 1 and
	// [hedge.MaxAttemptsLimit]; 1 disables hedging; zero means
	// [hedge.DefaultMaxAttempts].
	MaxAttempts int
	// Delay is how long to wait for an answer before sending the next
	// copy, and the fallback until a learned Quantile has MinSamples
	// latencies. Zero means [hedge.DefaultDelay]; negative is an error.
	Delay time.Duration
	// Quantile, when not zero, learns the delay as this quantile of
	// recent latencies (a fraction in (0, 1]: 0.95 for p95), measured per
	// wrapped service from sending a request to receiving its response
	// headers. Zero means a fixed Delay. See [hedge.Config.Quantile].
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
	// [hedge.Config]), as rampartgrpc.HedgeConfig's are.
	Name     string
	Observer observe.Observer
}

// HedgeLayer returns a layer that sends another copy of a slow request and
// returns the first good response: a hedged request, after Dean and
// Barroso, "The Tail at Scale" (2013). See package hedge for why and for the
// exact behaviour; this layer fills in the HTTP parts:
//
//   - Only requests that may be sent twice are hedged: an idempotent method
//     (RFC 9110: GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or an
//     Idempotency-Key header, and a body that can be sent again (none, or
//     [http.Request.GetBody] set, as [http.NewRequest] does for in-memory
//     bodies). Any other request is sent once, unchanged, and does not
//     touch the Budget.
//   - Each copy sends a body of its own from GetBody; the request's own
//     Body is closed unread, as the transport would have closed it. The
//     copies share the request's header, which the layers below must not
//     modify (the [http.RoundTripper] contract).
//   - A good response is one that [Retryable] would not retry: a transport
//     error, 429, and 5xx except 501 and 505 are not good, so a fast 503 from
//     one replica does not beat a slower 200 from another. A response that
//     is not good does not trigger a hedge, and a 429 or 503 carrying
//     [NoRetryHeader] "no" ends the hedging: no further copy is sent.
//   - The response returned keeps its copy's context until its body is
//     closed, so it can be read after RoundTrip returns; the caller must
//     close it, as always. Every other response has its body closed (see
//     the package doc), and the other copies are cancelled as soon as a
//     good response arrives.
//   - When no copy gets a good response, no response is lost: the first
//     failing response to arrive is returned, with a nil error, as
//     [RetryLayer] returns its last one; when every copy failed with a
//     transport error, the error is a [*hedge.AllFailedError] holding each
//     copy's error (or the only copy's error, unchanged, when no hedge was
//     sent).
//   - A copy that panics below the layer (in the transport, say) makes
//     RoundTrip panic on the caller's goroutine, once the other copies
//     have been cancelled and awaited, with a [*rampart.PanicError]
//     holding the value and the copy's stack, as [hedge.NewLayer] says; a
//     panic of the original goes on as it is.
//
// Put it inside a [RetryLayer] and outside a [BreakerLayer] and a
// per-attempt [TimeoutLayer], so that every copy consults the breaker and
// has its own deadline:
//
//	NewBuilder().Layer(retry).Layer(hedging).Layer(breaker).Layer(timeout)
//
// A bad cfg is the error [hedge.NewLayer] returns, naming the field. The
// layer and the services it wraps are safe for concurrent use; each wrapped
// service learns its own Quantile.
func HedgeLayer(cfg HedgeConfig) (Layer, error) {
	l, err := hedge.NewLayer(hedge.Config[*http.Request, *http.Response]{
		Hedgeable:   func(*http.Request) bool { return true }, // decided by resendService
		Budget:      cfg.Budget,
		MaxAttempts: cfg.MaxAttempts,
		Delay:       cfg.Delay,
		Quantile:    cfg.Quantile,
		Window:      cfg.Window,
		MinSamples:  cfg.MinSamples,
		Name:        cfg.Name,
		Observer:    cfg.Observer,
		Accept:      answered,
		Hint:        noRetryHint,
		Discard:     discard,
		Detach:      cancelOnClose,
	})
	if err != nil {
		return nil, err
	}
	return hedgeLayer{hedge: l}, nil
}

type hedgeLayer struct{ hedge Layer }

// Wrap returns inner with hedging; a nil inner gives a Service whose
// every call fails with an error matching [rampart.ErrNilService].
func (l hedgeLayer) Wrap(inner Service) Service {
	if nilservice.Is(inner) {
		return rampart.Failing[*http.Request, *http.Response]("ramparthttp: HedgeLayer: Wrap")
	}
	// No budget deposit for requests sent once: they never touch the
	// hedge budget.
	return &resendService{once: inner, many: l.hedge.Wrap(replayBody{inner})}
}

// answered reports whether an outcome is a good response, one a hedge
// should stop at.
func answered(resp *http.Response, err error) bool { return !Retryable(resp, err) }
