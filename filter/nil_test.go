package filter_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/filter"
	"github.com/rampart-go/rampart/internal/nilcheck"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	pass := func(context.Context, string) error { return nil }
	ok := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name:  "nil check",
			Build: func() (rampart.Service[string, string], error) { return filter.Wrap(ok, nil) },
			Want:  "filter: check must not be nil",
		},
		{
			Name: "nil allow",
			Build: func() (rampart.Service[string, string], error) {
				_, err := filter.NewAllowLayer[string, string](nil)
				return nil, err
			},
			Want: "filter: allow must not be nil",
		},
		{
			Name:       "Wrap of nil service",
			Build:      func() (rampart.Service[string, string], error) { return filter.Wrap[string, string](nil, pass) },
			Want:       "filter: svc must not be nil: rampart: nil service",
			NilService: true,
		},
		{
			Name:  "WrapAllow with nil allow",
			Build: func() (rampart.Service[string, string], error) { return filter.WrapAllow(ok, nil) },
			Want:  "filter: allow must not be nil",
		},
		{
			Name: "WrapAllow of nil service",
			Build: func() (rampart.Service[string, string], error) {
				return filter.WrapAllow[string, string](nil, func(context.Context, string) bool { return true })
			},
			Want:       "filter: svc must not be nil: rampart: nil service",
			NilService: true,
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
		{
			Name: "allow layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := filter.NewAllowLayer[string, string](func(context.Context, string) bool { return true })
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "filter: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}
