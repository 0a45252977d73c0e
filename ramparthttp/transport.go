package ramparthttp

import (
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// Config configures [NewTransport]. The zero Config is valid but rarely what
// you want: it sends requests through [http.DefaultTransport] with retry's
// defaults (up to 3 attempts of an idempotent request) and no budget,
// breaker or timeout, so nothing bounds its retries but MaxAttempts. Set
// Retry.Budget, or Retry.MaxAttempts to 1.
type Config struct {
	// Base sends the requests; nil means [http.DefaultTransport]. A nil
	// pointer (a nil *http.Transport) is an error.
	Base http.RoundTripper
	// Retry configures the retry layer. Set Retry.MaxAttempts to 1 to
	// disable retries. Set Retry.Budget: retries without a budget multiply
	// the load on a failing server.
	Retry RetryConfig
	// Breaker, if not nil, guards every attempt. Share one breaker among all
	// the clients of one dependency.
	Breaker *circuitbreaker.Breaker
	// Classify judges each attempt for Breaker: a failure, a success, or
	// neither ([circuitbreaker.Ignored]); see [ClassifiedBreakerLayer].
	// Nil means [Classify]: transport errors and 5xx but 501 and 505 are
	// failures, 429 is neither, anything else a success. It is used only
	// with a Breaker; what is retried is Retry.Retryable's to say. It must
	// be safe for concurrent use.
	Classify circuitbreaker.Classifier[*http.Response]
	// AttemptTimeout, if positive, bounds each attempt, reading its response
	// body included. Zero means no per-attempt timeout (the caller's context
	// and http.Client.Timeout still apply); negative is an error. An attempt
	// that runs out of time, before its headers or while its body is read,
	// counts as a breaker failure (see [BreakerLayer]).
	AttemptTimeout time.Duration
}

// NewTransport returns an [http.RoundTripper] with the recommended client
// stack around cfg.Base, outermost first: [RetryLayer],
// [ClassifiedBreakerLayer] (if cfg.Breaker is set, with cfg.Classify), [TimeoutLayer] (if cfg.AttemptTimeout is set). So each
// attempt consults the breaker, an open breaker ends the retries at once,
// and a timed-out attempt counts as a breaker failure. A bad field is an
// error naming it. The RoundTripper is safe for concurrent use.
func NewTransport(cfg Config) (http.RoundTripper, error) {
	if cfg.Base != nil {
		if v := reflect.ValueOf(cfg.Base); v.Kind() == reflect.Pointer && v.IsNil() {
			return nil, fmt.Errorf("ramparthttp: Config.Base must not be a nil pointer, got %T(nil)", cfg.Base)
		}
	}
	if cfg.AttemptTimeout < 0 {
		return nil, fmt.Errorf("ramparthttp: Config.AttemptTimeout must be >= 0 (0 means no per-attempt timeout), got %v", cfg.AttemptTimeout)
	}
	b := NewBuilder()
	rt, err := RetryLayer(cfg.Retry)
	if err != nil {
		return nil, fmt.Errorf("ramparthttp: Config.Retry: %w", err)
	}
	b = b.Layer(rt)
	if cfg.Breaker != nil {
		b = b.Layer(ClassifiedBreakerLayer(cfg.Breaker, cfg.Classify))
	}
	if cfg.AttemptTimeout > 0 {
		to, err := TimeoutLayer(cfg.AttemptTimeout)
		if err != nil {
			return nil, fmt.Errorf("ramparthttp: Config.AttemptTimeout: %w", err)
		}
		b = b.Layer(to)
	}
	return NewRoundTripper(b.Service(FromRoundTripper(cfg.Base))), nil
}
