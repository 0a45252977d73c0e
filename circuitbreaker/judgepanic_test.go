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
	"github.com/rampart-go/rampart/internal/wrap"
)

// panickingIsFailure is a Config.IsFailure that panics; its name must
// appear in the stack the caller sees.
func panickingIsFailure(error) bool { panic("judge exploded") }

// panickingClassifier is a Classifier that panics; its name must appear in
// the stack the caller sees.
func panickingClassifier(string, error) rampart.Outcome { panic("judge exploded") }

// TestLayer_CB7_PanickingJudgeIsFailureAndRepanics checks that a panic in
// Config.IsFailure or in a Classifier, whichever way the outcome reaches
// it, records the failure ErrPanicked and continues with its value and
// stack: in Closed it trips a breaker that trips on one failure, and
// during a HalfOpen probe it re-opens the breaker rather than keeping the
// probe slot until the lease ends.
func TestLayer_CB7_PanickingJudgeIsFailureAndRepanics(t *testing.T) {
	key := func(req string) string { return req }
	tests := []struct {
		name string
		// isFailure says whether the breaker's IsFailure panics (else the
		// classifier given to call does).
		isFailure bool
		// group says whether call uses a group (of breakers with the
		// test's Config) rather than one breaker.
		group bool
		// call makes one call through the breaker that g or b stands for:
		// exactly one of them is set.
		call func(t *testing.T, b *circuitbreaker.Breaker, g *circuitbreaker.Group[string])
	}{{
		name: "layer, IsFailure", isFailure: true,
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			_, _ = wrap.Layer(&backend{err: errBoom}, circuitbreaker.NewLayer, b, nil).Call(t.Context(), "x")
		},
	}, {
		name: "classified layer, Classifier on a response",
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			_, _ = circuitbreaker.NewLayer[string, string](b, panickingClassifier).Wrap(&backend{}).Call(t.Context(), "x")
		},
	}, {
		name: "classified layer, Classifier on an error",
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			_, _ = circuitbreaker.NewLayer[string, string](b, panickingClassifier).Wrap(&backend{err: errBoom}).Call(t.Context(), "x")
		},
	}, {
		name: "Run, IsFailure", isFailure: true,
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			_, _ = circuitbreaker.Run(t.Context(), b, func(context.Context) (int, error) { return 0, errBoom })
		},
	}, {
		name: "group layer, IsFailure", isFailure: true, group: true,
		call: func(t *testing.T, _ *circuitbreaker.Breaker, g *circuitbreaker.Group[string]) {
			l, err := circuitbreaker.NewGroupLayer[string, string](g, key, nil)
			require.NoError(t, err)
			_, _ = l.Wrap(&backend{err: errBoom}).Call(t.Context(), "x")
		},
	}, {
		name: "classified group layer, Classifier", group: true,
		call: func(t *testing.T, _ *circuitbreaker.Breaker, g *circuitbreaker.Group[string]) {
			l, err := circuitbreaker.NewGroupLayer[string, string](g, key, panickingClassifier)
			require.NoError(t, err)
			_, _ = l.Wrap(&backend{}).Call(t.Context(), "x")
		},
	}, {
		name: "Permit.Done, IsFailure", isFailure: true,
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			p.Done(errBoom)
		},
	}, {
		name: "Permit.DoneContext, IsFailure", isFailure: true,
		call: func(t *testing.T, b *circuitbreaker.Breaker, _ *circuitbreaker.Group[string]) {
			p, err := b.TryAcquire()
			require.NoError(t, err)
			p.DoneContext(t.Context(), errBoom)
		},
	}}
	for _, tt := range tests {
		for _, probe := range []bool{false, true} {
			name := tt.name + ", Closed"
			if probe {
				name = tt.name + ", HalfOpen probe"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second}
					if tt.isFailure {
						cfg.IsFailure = panickingIsFailure
					}
					var b *circuitbreaker.Breaker
					var g *circuitbreaker.Group[string]
					if tt.group {
						g = newGroup(t, circuitbreaker.GroupConfig{Breaker: cfg})
						b = g.Breaker("x")
					} else {
						b = newBreaker(t, cfg)
					}
					if probe {
						fail(t, b, 1, errBoom)
						time.Sleep(time.Second)
					}
					value, stack := panicOf(func() { tt.call(t, b, g) })
					assert.Equal(t, "judge exploded", value)
					if tt.isFailure {
						assert.Contains(t, stack, "circuitbreaker_test.panickingIsFailure", "the original stack is kept")
					} else {
						assert.Contains(t, stack, "circuitbreaker_test.panickingClassifier", "the original stack is kept")
					}
					want := circuitbreaker.Snapshot{
						State: circuitbreaker.Open, RetryAfter: time.Second, Cause: circuitbreaker.ErrPanicked,
					}
					if g != nil {
						want.Name = "x"
					}
					assert.Equal(t, want, b.State(), "the panic is a failure; no permit is left unfinished")
				})
			})
		}
	}
}
