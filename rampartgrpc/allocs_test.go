package rampartgrpc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartgrpc"
)

// TestUnary_GR16_StackAllocations guards what the interceptor itself
// allocates per call, over an invoker that allocates nothing: nothing for
// a method sent once through a breaker, and one object (the attempt's
// trailer and options) for a method that may be retried.
func TestUnary_GR16_StackAllocations(t *testing.T) {
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	for _, tc := range []struct {
		name   string
		method string
		want   float64
	}{
		{name: "sent once", method: "/other/Method", want: 0},
		{name: "may be retried", method: unaryMethod, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fullStack(t)
			cfg.AttemptTimeout = 0 // a deadline allocates, as context.WithTimeout does
			ic, err := rampartgrpc.NewUnaryClientInterceptor(cfg)
			require.NoError(t, err)
			ctx := t.Context()
			allocs := testing.AllocsPerRun(1000, func() {
				_ = ic(ctx, tc.method, nil, nil, nil, invoker)
			})
			assert.Equal(t, tc.want, allocs)
		})
	}
	t.Run("one breaker", func(t *testing.T) {
		ic, err := rampartgrpc.NewUnaryClientInterceptor(rampartgrpc.ClientConfig{Breaker: newBreaker(t, circuitbreaker.Config{})})
		require.NoError(t, err)
		ctx := t.Context()
		assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = ic(ctx, unaryMethod, nil, nil, nil, invoker) }))
	})
}
