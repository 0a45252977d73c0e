package circuitbreaker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// TestBreaker_CB15_ZeroValueIsDefaultBreaker checks that a zero Breaker is
// usable through every method, whichever is called first, and behaves as
// New(Config{}): five consecutive failures trip it, it cools down for 30
// seconds, then one probe success closes it.
func TestBreaker_CB15_ZeroValueIsDefaultBreaker(t *testing.T) {
	closed := circuitbreaker.Snapshot{State: circuitbreaker.Closed}
	first := []struct {
		name string
		use  func(t *testing.T, b *circuitbreaker.Breaker)
	}{{
		name: "State",
		use:  func(t *testing.T, b *circuitbreaker.Breaker) { assert.Equal(t, closed, b.State()) },
	}, {
		name: "TryAcquire",
		use: func(t *testing.T, b *circuitbreaker.Breaker) {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			assert.True(t, p.Success())
		},
	}, {
		name: "TryAcquire then rampart.Failure",
		use: func(t *testing.T, b *circuitbreaker.Breaker) {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			assert.True(t, p.Failure(errBoom))
			assert.Equal(t, circuitbreaker.Snapshot{
				State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: 1},
			}, b.State())
			b.Reset()
		},
	}, {
		name: "Reset",
		use:  func(t *testing.T, b *circuitbreaker.Breaker) { b.Reset() },
	}, {
		name: "Subscribe",
		use: func(t *testing.T, b *circuitbreaker.Breaker) {
			unsubscribe := b.Subscribe(func(circuitbreaker.Transition) {})
			unsubscribe()
		},
	}, {
		name: "layer",
		use: func(t *testing.T, b *circuitbreaker.Breaker) {
			resp, err := guard(b, &backend{}).Call(t.Context(), "a")
			require.NoError(t, err)
			assert.Equal(t, "ok:a", resp)
		},
	}, {
		name: "classified layer",
		use: func(t *testing.T, b *circuitbreaker.Breaker) {
			svc := circuitbreaker.NewLayer[string, string](b, nil).Wrap(&backend{})
			resp, err := svc.Call(t.Context(), "a")
			require.NoError(t, err)
			assert.Equal(t, "ok:a", resp)
		},
	}}
	for _, tt := range first {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b circuitbreaker.Breaker
				tt.use(t, &b)
				assert.Equal(t, closed, b.State())

				rec := record(&b)
				fail(t, &b, 4, errBoom)
				assert.Equal(t, closed.State, b.State().State)
				fail(t, &b, 1, errBoom)
				assert.Equal(t, circuitbreaker.Snapshot{
					State: circuitbreaker.Open, RetryAfter: circuitbreaker.DefaultCoolDown, Cause: errBoom,
				}, b.State())
				assert.Equal(t, circuitbreaker.DefaultCoolDown, openErr(t, &b).RetryAfter())
				time.Sleep(circuitbreaker.DefaultCoolDown)
				p, err := b.TryAcquire()
				require.NoError(t, err)
				openErr(t, &b) // one probe at a time
				require.True(t, p.Success())
				assert.Equal(t, closed, b.State())
				assert.Equal(t, []string{"closed>open", "open>half-open", "half-open>closed"}, rec.edges())
			})
		})
	}
}

// TestBreaker_CB15_ZeroValueConcurrentFirstUse checks that goroutines that
// use a zero Breaker for the first time together set it up once: every
// failure lands in the same history.
func TestBreaker_CB15_ZeroValueConcurrentFirstUse(t *testing.T) {
	var b circuitbreaker.Breaker
	start := make(chan struct{})
	done := make(chan struct{})
	for range circuitbreaker.DefaultFailures - 1 {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			p, err := b.TryAcquire()
			if assert.NoError(t, err) {
				assert.True(t, p.Failure(errBoom))
			}
		}()
	}
	close(start)
	for range circuitbreaker.DefaultFailures - 1 {
		<-done
	}
	assert.Equal(t, circuitbreaker.Snapshot{
		State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: circuitbreaker.DefaultFailures - 1},
	}, b.State())
}

// TestLayer_CB15_NilInnerServiceFailsEachCall checks that a breaker layer's
// Wrap of a nil service returns a service that fails every call with an
// error matching rampart.ErrNilService, without panicking and without
// counting anything against the breaker.
func TestLayer_CB15_NilInnerServiceFailsEachCall(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	layers := map[string]rampart.Layer[string, string]{
		"NewLayer":            circuitbreaker.NewLayer[string, string](b, nil),
		"NewLayer classified": circuitbreaker.NewLayer[string, string](b, func(string, error) rampart.Outcome { return rampart.Failure }),
	}
	for name, l := range layers {
		t.Run(name, func(t *testing.T) {
			svc := l.Wrap(nil)
			for range 2 {
				resp, err := svc.Call(t.Context(), "a")
				require.ErrorIs(t, err, rampart.ErrNilService)
				assert.Equal(t, "circuitbreaker: Wrap: rampart: nil service", err.Error())
				assert.Empty(t, resp)
			}
			assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, b.State(), "nothing was counted")
		})
	}
}

// TestLayer_CB15_NilBreakerFailsEachCall checks that a layer over a nil
// *Breaker fails every call with an error saying so, and calls nothing.
func TestLayer_CB15_NilBreakerFailsEachCall(t *testing.T) {
	be := &backend{}
	for name, l := range map[string]rampart.Layer[string, string]{
		"NewLayer":            circuitbreaker.NewLayer[string, string](nil, nil),
		"NewLayer classified": circuitbreaker.NewLayer[string, string](nil, func(string, error) rampart.Outcome { return rampart.Failure }),
	} {
		t.Run(name, func(t *testing.T) {
			for _, svc := range []rampart.Service[string, string]{l.Wrap(be), l.Wrap(nil)} {
				_, err := svc.Call(context.Background(), "a")
				require.EqualError(t, err, "circuitbreaker: layer built over a nil *Breaker (build one with circuitbreaker.New)")
			}
		})
	}
	assert.Zero(t, be.calls.Load())
}

// TestPermit_CB15_ZeroPermitIsFinished checks the documented zero Permit.
func TestPermit_CB15_ZeroPermitIsFinished(t *testing.T) {
	var p circuitbreaker.Permit
	assert.False(t, p.Success())
	assert.False(t, p.Failure(errBoom))
	assert.False(t, p.Done(errBoom))
	assert.False(t, p.DoneContext(t.Context(), errBoom))
	p.Ignore()
}
