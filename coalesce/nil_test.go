package coalesce_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/coalesce"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/wrap"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	key := func(req string) string { return req }
	ok := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "nil key",
			Build: func() (rampart.Service[string, string], error) {
				return wrap.Service(ok, coalesce.NewLayer, coalesce.Config[string]{})
			},
			Want: "coalesce: key must not be nil",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := coalesce.NewLayer[string, string](coalesce.Config[string]{Key: key})
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "coalesce: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}
