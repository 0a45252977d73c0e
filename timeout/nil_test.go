package timeout_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/timeout"
)

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	for _, tc := range []struct {
		name       string
		build      func() (rampart.Service[string, string], error)
		want       string
		nilService bool
	}{
		{
			name: "zero Config",
			build: func() (rampart.Service[string, string], error) {
				_, err := timeout.New(timeout.Config[string, string]{})
				return nil, err
			},
			want: "timeout: Timeout must be > 0 when For is nil, got 0s",
		},
		{
			name:       "Wrap of nil service",
			build:      func() (rampart.Service[string, string], error) { return timeout.Wrap[string, string](nil, time.Second) },
			want:       "timeout: svc must not be nil: rampart: nil service",
			nilService: true,
		},
		{
			name: "layer wraps nil service",
			build: func() (rampart.Service[string, string], error) {
				l, err := timeout.NewLayer[string, string](time.Second)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			want:       "timeout: Wrap: rampart: nil service",
			nilService: true,
		},
		{
			name: "abandoning layer wraps nil service",
			build: func() (rampart.Service[string, string], error) {
				l, err := timeout.New(timeout.Config[string, string]{Timeout: time.Second, Abandon: true})
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			want:       "timeout: Wrap: rampart: nil service",
			nilService: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := tc.build()
			if err == nil {
				require.NotNil(t, svc)
				_, err = svc.Call(t.Context(), "req")
			}
			assert.EqualError(t, err, tc.want)
			if tc.nilService {
				assert.ErrorIs(t, err, rampart.ErrNilService)
			}
		})
	}
}
