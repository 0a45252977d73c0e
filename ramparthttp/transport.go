package ramparthttp

import (
	"fmt"
	"net/http"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// Config configures [NewTransport]. The zero Config is valid: it sends every
// request once through [http.DefaultTransport] with retry's defaults and no
// breaker, budget or timeout, which is rarely what you want.
type Config struct {
	// Base sends the requests; nil means [http.DefaultTransport].
	Base http.RoundTripper
	// Retry configures the retry layer. Set Retry.MaxAttempts to 1 to
	// disable retries. Set Retry.Budget: retries without a budget multiply
	// the load on a failing server.
	Retry RetryConfig
	// Breaker, if not nil, guards every attempt. Share one breaker among all
	// the clients of one dependency.
	Breaker *circuitbreaker.Breaker
	// AttemptTimeout, if positive, bounds each attempt, reading its response
	// body included. Zero means no per-attempt timeout (the caller's context
	// and http.Client.Timeout still apply); negative is an error.
	AttemptTimeout time.Duration
}

// NewTransport returns an [http.RoundTripper] with the recommended client
// stack around cfg.Base, outermost first: [RetryLayer], [BreakerLayer] (if
// cfg.Breaker is set), [TimeoutLayer] (if cfg.AttemptTimeout is set). So each
// attempt consults the breaker, an open breaker ends the retries at once,
// and a timed-out attempt counts as a breaker failure. A bad field is an
// error naming it. The RoundTripper is safe for concurrent use.
func NewTransport(cfg Config) (http.RoundTripper, error) {
	b := NewBuilder()
	rt, err := RetryLayer(cfg.Retry)
	if err != nil {
		return nil, fmt.Errorf("ramparthttp: Config.Retry: %w", err)
	}
	b = b.Layer(rt)
	if cfg.Breaker != nil {
		b = b.Layer(BreakerLayer(cfg.Breaker))
	}
	if cfg.AttemptTimeout != 0 {
		to, err := TimeoutLayer(cfg.AttemptTimeout)
		if err != nil {
			return nil, fmt.Errorf("ramparthttp: Config.AttemptTimeout: %w", err)
		}
		b = b.Layer(to)
	}
	return NewRoundTripper(b.Service(FromRoundTripper(cfg.Base))), nil
}
