package circuitbreaker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// TestGroup_CB15_CB18_ZeroValueIsDefaultGroup checks that a zero Group is
// usable through every method and through the group layers, whichever comes
// first, and behaves as NewGroup(GroupConfig{}): its breakers are
// New(Config{}) breakers named after their keys (five consecutive failures
// trip one for 30 seconds), and an idle key is dropped after 10 minutes.
func TestGroup_CB15_CB18_ZeroValueIsDefaultGroup(t *testing.T) {
	first := []struct {
		name string
		use  func(t *testing.T, g *circuitbreaker.Group[string])
	}{{
		name: "Breaker",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			require.NotNil(t, g.Breaker("x"))
		},
	}, {
		name: "Overflow",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			o := g.Overflow()
			require.NotNil(t, o)
			assert.Equal(t, "(overflow)", o.State().Name)
		},
	}, {
		name: "Len",
		use:  func(t *testing.T, g *circuitbreaker.Group[string]) { assert.Equal(t, 0, g.Len()) },
	}, {
		name: "States",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			assert.Empty(t, g.States())
		},
	}, {
		name: "Run",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			got, err := circuitbreaker.Run(t.Context(), g.Breaker("x"), func(context.Context) (int, error) { return 1, nil })
			require.NoError(t, err)
			assert.Equal(t, 1, got)
		},
	}, {
		name: "group layer",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			l, err := circuitbreaker.NewGroupLayer[string, string](g, func(req string) string { return req }, nil)
			require.NoError(t, err)
			resp, err := l.Wrap(&backend{}).Call(t.Context(), "x")
			require.NoError(t, err)
			assert.Equal(t, "ok:x", resp)
		},
	}, {
		name: "classified group layer",
		use: func(t *testing.T, g *circuitbreaker.Group[string]) {
			l, err := circuitbreaker.NewGroupLayer[string, string](g, func(req string) string { return req }, nil)
			require.NoError(t, err)
			resp, err := l.Wrap(&backend{}).Call(t.Context(), "x")
			require.NoError(t, err)
			assert.Equal(t, "ok:x", resp)
		},
	}}
	for _, tt := range first {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g circuitbreaker.Group[string]
				tt.use(t, &g)

				x := g.Breaker("x")
				require.NotNil(t, x)
				assert.Same(t, x, g.Breaker("x"))
				fail(t, x, 5, errBoom)
				assert.Equal(t, circuitbreaker.Snapshot{
					Name: "x", State: circuitbreaker.Open, RetryAfter: 30 * time.Second, Cause: errBoom,
				}, x.State())
				assert.Equal(t, "(overflow)", g.Overflow().State().Name)

				y := g.Breaker("y")
				time.Sleep(10 * time.Minute)
				assert.Equal(t, []string{"x"}, keysOf(&g), "y idle for 10 minutes is dropped; x's cool-down is over but it was used")
				assert.NotSame(t, y, g.Breaker("y"))
			})
		})
	}
}
