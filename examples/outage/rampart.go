package main

import (
	"context"
	"net/http"
	"time"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
)

// rampartClient sends each request through ramparthttp's stack: retry within
// a budget, a circuit breaker consulted before every attempt, and a
// per-attempt timeout.
type rampartClient struct{ hc *http.Client }

func newRampart(o options) (*rampartClient, error) {
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:       circuitbreaker.Consecutive{Failures: 5},
		ResetTimeout: o.resetTimeout,
		MaxProbes:    1,
	})
	if err != nil {
		return nil, err
	}
	// Retries may add at most 10% to recent traffic, plus one per second.
	rb, err := budget.New(budget.Config{Ratio: 0.1, MinPerSecond: 1})
	if err != nil {
		return nil, err
	}
	backoff, err := retry.NewExponential(retry.Exponential{Base: 50 * time.Millisecond, Max: time.Second})
	if err != nil {
		return nil, err
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 256
	tr, err := ramparthttp.NewTransport(ramparthttp.Config{
		Base:           base,
		Breaker:        br,
		AttemptTimeout: o.attemptTimeout,
		Retry:          ramparthttp.RetryConfig{MaxAttempts: 3, Backoff: backoff, Budget: rb},
	})
	if err != nil {
		return nil, err
	}
	return &rampartClient{hc: &http.Client{Transport: tr}}, nil
}

func (c *rampartClient) do(ctx context.Context, url string) error { return get(ctx, c.hc, url) }
