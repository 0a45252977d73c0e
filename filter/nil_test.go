package filter_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/filter"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/wrap"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	pass := func(context.Context, string) error { return nil }
	ok := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name:  "nil check",
			Build: func() (rampart.Service[string, string], error) { return wrap.Service(ok, filter.NewLayer, nil) },
			Want:  "filter: check must not be nil",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := filter.NewLayer[string, string](pass)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "filter: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}
