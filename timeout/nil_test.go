package timeout_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/timeout"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "zero Config",
			Build: func() (rampart.Service[string, string], error) {
				_, err := timeout.NewLayer(timeout.Config[string, string]{})
				return nil, err
			},
			Want: "timeout: Timeout must be > 0, got 0s",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: time.Second})
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "timeout: Wrap: rampart: nil service",
			NilService: true,
		},
		{
			Name: "abandoning layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: time.Second, Abandon: true})
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "timeout: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}
