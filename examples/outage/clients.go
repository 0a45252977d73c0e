package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/shadow"
)

// client is what the load generator drives: one caller request, which may
// make several backend attempts.
type client interface {
	do(ctx context.Context) error
}

// naive retries every failure o.naiveRetries times, at once, with a
// per-attempt timeout: the client that turns an outage into a retry storm.
type naive struct {
	hc      *http.Client
	url     string
	retries int
}

func newNaive(o options, base http.RoundTripper, url string) *naive {
	return &naive{hc: &http.Client{Transport: base, Timeout: o.attemptTimeout}, url: url, retries: o.naiveRetries}
}

func (n *naive) do(ctx context.Context) error {
	var err error
	for range n.retries + 1 {
		if err = get(ctx, n.hc, n.url); err == nil {
			return nil
		}
	}
	return err
}

// rampartClient sends each request through ramparthttp's stack: retry within
// a budget, a circuit breaker consulted before every attempt, and a
// per-attempt timeout. It records the breaker's transitions.
type rampartClient struct {
	hc  *http.Client
	url string
	// attempts counts the attempts the breaker let through, as the
	// transport under it saw them.
	attempts atomic.Int64

	shadow *shadow.Shadow // with -shadows

	mu          sync.Mutex
	transitions []circuitbreaker.Transition // guarded by mu
}

// The rampart client's configuration, apart from the reset and attempt
// timeouts, which are flags.
const (
	tripAfter       = 5   // consecutive failures that trip the breaker
	rampartAttempts = 3   // attempts per request, the first included
	budgetRatio     = 0.1 // retries may add this fraction to recent requests...
	budgetFloor     = 1   // ...plus this many per second
)

func newRampart(o options, base http.RoundTripper, url string) (*rampartClient, error) {
	obs := o.observer
	if o.registry != nil {
		obs = observe.Join(obs, o.registry.Observer())
	}
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Name:      "backend",
		Observer:  obs,
		Policy:    circuitbreaker.Consecutive{Failures: tripAfter},
		CoolDown:  o.coolDown,
		MaxProbes: 1,
	})
	if err != nil {
		return nil, err
	}
	rb, err := budget.New(budget.Config{Ratio: budgetRatio, MinPerSecond: budgetFloor, Name: "backend", Observer: obs})
	if err != nil {
		return nil, err
	}
	backoff, err := retry.NewExponential(retry.Exponential{Base: 50 * time.Millisecond, Max: time.Second})
	if err != nil {
		return nil, err
	}
	c := &rampartClient{url: url}
	var sh *shadow.Shadow
	if o.shadows {
		// Two candidates a replay might have found: a quicker trip with a
		// shorter cool-down, and a failure-rate window.
		cands := o.candidates
		if len(cands) == 0 {
			cands = []shadow.Candidate{
				{Name: "3 in a row, 500ms", Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 3}, CoolDown: 500 * time.Millisecond, MaxProbes: 1}},
				{Name: "half of 20, 5s", Breaker: circuitbreaker.Config{
					Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 20}, Ratio: 0.5}, CoolDown: 5 * time.Second, MaxProbes: 1}},
			}
		}
		sh, err = shadow.New(shadow.Config{Live: br, Candidates: cands})
		if err != nil {
			return nil, err
		}
	}
	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
		Base:           countAttempts{base, &c.attempts},
		Breaker:        br,
		Shadow:         sh,
		AttemptTimeout: o.attemptTimeout,
		Retry:          ramparthttp.RetryConfig{MaxAttempts: rampartAttempts, Backoff: backoff, Budget: rb, Name: "backend", Observer: obs},
	})
	if err != nil {
		return nil, err
	}
	if o.registry != nil {
		o.registry.AddBreaker(br)
		o.registry.AddBudget("backend", rb)
	}
	c.hc, c.shadow = &http.Client{Transport: tr}, sh
	br.Subscribe(func(t circuitbreaker.Transition) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.transitions = append(c.transitions, t)
	})
	return c, nil
}

func (c *rampartClient) do(ctx context.Context) error { return get(ctx, c.hc, c.url) }

// breakerCounts returns the calls the breaker saw, from what the callers
// got (s) and the attempts the transport under the breaker saw: each
// caller success is one successful attempt, every other attempt let
// through failed, and each call failed fast is one rejected attempt (a
// rejection ends the retries).
func (c *rampartClient) breakerCounts(s summary) breakerCounts {
	n := c.attempts.Load()
	return breakerCounts{Calls: n + s.FastFails, Successes: s.Successes, Failures: n - s.Successes, FailedFast: s.FastFails}
}

// countAttempts counts the requests it passes to its RoundTripper.
type countAttempts struct {
	http.RoundTripper
	n *atomic.Int64
}

func (c countAttempts) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.RoundTripper.RoundTrip(req)
}

func (c *rampartClient) breakerTransitions() []circuitbreaker.Transition {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(make([]circuitbreaker.Transition, 0, len(c.transitions)), c.transitions...) // never nil: a breaker that never tripped
}

// get makes one GET and reads the whole body; a non-2xx status is an error.
func get(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return errors.New(resp.Status)
	}
	return nil
}
