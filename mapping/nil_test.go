package mapping_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/mapping"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	same := func(_ context.Context, s string) (string, error) { return s, nil }
	ok := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil })
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "Request of nil service",
			Build: func() (rampart.Service[string, string], error) {
				return mapping.Request[string, string, string](nil, same)
			},
			Want:       "mapping: svc must not be nil: rampart: nil service",
			NilService: true,
		},
		{
			Name: "Response of nil service",
			Build: func() (rampart.Service[string, string], error) {
				return mapping.Response[string, string, string](nil, func(s string) (string, error) { return s, nil })
			},
			Want:       "mapping: svc must not be nil: rampart: nil service",
			NilService: true,
		},
		{
			Name: "nil f",
			Build: func() (rampart.Service[string, string], error) {
				return mapping.Request[string, string, string](ok, nil)
			},
			Want: "mapping: f must not be nil",
		},
		{
			Name: "error layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := mapping.NewErrorLayer[string, string](func(err error) error { return err })
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "mapping: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}
