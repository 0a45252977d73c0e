package ramparthttp

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/record"
)

// Config configures [NewTransport]. The zero Config is valid: it sends
// requests through [http.DefaultTransport] with retry's defaults (up to 3
// attempts of an idempotent request) within a retry budget of its own
// (package budget's defaults), and no breaker or timeout. Share one
// Retry.Budget and one Breaker among the clients of one dependency.
type Config struct {
	// Base sends the requests; nil means [http.DefaultTransport]. A nil
	// pointer (a nil *http.Transport) is an error.
	Base http.RoundTripper
	// Retry configures the retry layer. Set Retry.MaxAttempts to 1 to
	// disable retries.
	Retry RetryConfig
	// Breaker, if not nil, guards every attempt. Share one breaker among all
	// the clients of one dependency. Set at most one of Breaker and
	// HostBreakers.
	Breaker *circuitbreaker.Breaker
	// HostBreakers, if not nil, guards every attempt with the breaker the
	// group holds for the request's host ([Host]: req.URL.Host), so that
	// one bad host among many stops only the requests to it (see
	// [GroupBreakerLayer]). Use it for a client that talks to many
	// endpoints (replicas, shards, tenants' servers); build the group with
	// [circuitbreaker.NewGroup], which sets each breaker's Config and how
	// many hosts are held (a zero Group is one with the defaults). Setting
	// both Breaker and HostBreakers is an error.
	HostBreakers *circuitbreaker.Group[string]
	// Classify judges each attempt for Breaker or HostBreakers: a failure,
	// a success, or neither ([circuitbreaker.Ignored]); see
	// [ClassifiedBreakerLayer]. Nil means [Classify]: transport errors and
	// 5xx but 501 and 505 are failures, 429 is neither, anything else a
	// success. It is used only with a breaker; what is retried is
	// Retry.Retryable's to say. It must be safe for concurrent use.
	Classify circuitbreaker.Classifier[*http.Response]
	// Recorder, if not nil, records every attempt for package sim to
	// replay, between the retry layer and the breaker, judged by Classify
	// as the breaker judges it (see [RecordLayer]).
	Recorder *record.Recorder
	// AttemptTimeout, if positive, bounds each attempt, reading its response
	// body included (see [TimeoutLayer]). Zero means no per-attempt timeout
	// (the caller's context and http.Client.Timeout still apply); negative
	// is an error. An attempt that runs out of time, before its headers or
	// while its body is read, counts as a breaker failure.
	AttemptTimeout time.Duration
	// HeaderTimeout, if positive, bounds the time from sending each attempt
	// until its response headers arrive, and not the reading of the body
	// (see [HeaderTimeoutLayer]). An attempt whose headers come too late
	// is a breaker failure and is retried, as a timeout; a slow body after
	// prompt headers is not. Zero means no such limit; negative is an
	// error. Use HeaderTimeout when responses may be large or streamed,
	// AttemptTimeout when the whole exchange must end in time; with both,
	// a HeaderTimeout not shorter than AttemptTimeout has no effect.
	HeaderTimeout time.Duration
}

// NewTransport returns an [http.RoundTripper] with the recommended client
// stack around cfg.Base, outermost first: [RetryLayer]; [RecordLayer] if
// cfg.Recorder is set; [ClassifiedBreakerLayer] if cfg.Breaker is set, or [GroupBreakerLayer]
// keyed by [Host] if cfg.HostBreakers is, with cfg.Classify;
// [TimeoutLayer] if cfg.AttemptTimeout is set; [HeaderTimeoutLayer] if
// cfg.HeaderTimeout is set. So each attempt consults the breaker, an open
// breaker ends the retries at once, and a timed-out attempt counts as a
// breaker failure. A bad field is an error naming it and the accepted
// values. The RoundTripper is safe for concurrent use.
func NewTransport(cfg Config) (http.RoundTripper, error) {
	if nilvalue.Is(cfg.Base) {
		return nil, fmt.Errorf("ramparthttp: Config.Base must not be a nil pointer, got %T(nil)", cfg.Base)
	}
	if cfg.AttemptTimeout < 0 {
		return nil, fmt.Errorf("ramparthttp: Config.AttemptTimeout must be >= 0 (0 means no per-attempt timeout), got %v", cfg.AttemptTimeout)
	}
	if cfg.HeaderTimeout < 0 {
		return nil, fmt.Errorf("ramparthttp: Config.HeaderTimeout must be >= 0 (0 means no limit on the time to the response headers), got %v", cfg.HeaderTimeout)
	}
	if cfg.Breaker != nil && cfg.HostBreakers != nil {
		return nil, errors.New("ramparthttp: Config.Breaker and Config.HostBreakers must not both be set (one breaker for every host, or one per host)")
	}
	b := NewBuilder()
	rt, err := RetryLayer(cfg.Retry)
	if err != nil {
		return nil, fmt.Errorf("ramparthttp: Config.Retry: %w", err)
	}
	b = b.Layer(rt)
	if cfg.Recorder != nil {
		b = b.Layer(RecordLayer(cfg.Recorder, cfg.Classify))
	}
	switch {
	case cfg.Breaker != nil:
		b = b.Layer(ClassifiedBreakerLayer(cfg.Breaker, cfg.Classify))
	case cfg.HostBreakers != nil:
		b = b.Layer(GroupBreakerLayer(cfg.HostBreakers, Host, cfg.Classify))
	}
	if cfg.AttemptTimeout > 0 {
		to, err := TimeoutLayer(cfg.AttemptTimeout)
		if err != nil {
			return nil, fmt.Errorf("ramparthttp: Config.AttemptTimeout: %w", err)
		}
		b = b.Layer(to)
	}
	if cfg.HeaderTimeout > 0 {
		ht, err := HeaderTimeoutLayer(cfg.HeaderTimeout)
		if err != nil {
			return nil, fmt.Errorf("ramparthttp: Config.HeaderTimeout: %w", err)
		}
		b = b.Layer(ht)
	}
	return NewRoundTripper(b.Service(FromRoundTripper(cfg.Base))), nil
}
