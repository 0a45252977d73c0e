package fallback_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/fallback"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/wrap"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	cfg := fallback.Config[string, string]{Fallback: func(context.Context, string, error) (string, error) { return "fallback", nil }}
	ok := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "zero Config",
			Build: func() (rampart.Service[string, string], error) {
				return wrap.Service(ok, fallback.NewLayer, fallback.Config[string, string]{})
			},
			Want: "fallback: Fallback must not be nil",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := fallback.NewLayer(cfg)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "fallback: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}
