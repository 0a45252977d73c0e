package rampartgrpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartgrpc"
)

// fullStack is the client stack the cost is measured for: a breaker per
// method, retries within a budget, and a per-attempt timeout.
func fullStack(b testing.TB) rampartgrpc.ClientConfig {
	g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{})
	require.NoError(b, err)
	rb, err := budget.New(budget.Config{})
	require.NoError(b, err)
	return rampartgrpc.ClientConfig{
		Breakers:       g,
		Retry:          rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Budget: rb},
		AttemptTimeout: time.Second,
	}
}

// benchUnary measures one successful unary call over bufconn; with
// deadline set, each call carries a one-second deadline of its caller's.
func benchUnary(b *testing.B, deadline bool, dialOpts ...grpc.DialOption) {
	e := start(b, networks[0], &testServer{}, nil, dialOpts...)
	req := &testgrpc.SimpleRequest{}
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := b.Context(), context.CancelFunc(func() {})
		if deadline {
			ctx, cancel = context.WithTimeout(ctx, time.Second)
		}
		_, err := e.tc.UnaryCall(ctx, req)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnary compares a unary call through the full client stack with
// the bare call. A deadline costs grpc-go and the context package alike,
// whoever sets it, so the stack with its per-attempt timeout ("full") is
// compared with a bare call that carries a deadline ("bare-deadline"), and
// the stack without it ("full-no-timeout") with the bare call ("bare").
func BenchmarkUnary(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchUnary(b, false) })
	b.Run("bare-deadline", func(b *testing.B) { benchUnary(b, true) })
	b.Run("full", func(b *testing.B) {
		ic, err := rampartgrpc.NewUnaryClientInterceptor(fullStack(b))
		require.NoError(b, err)
		benchUnary(b, false, grpc.WithUnaryInterceptor(ic))
	})
	b.Run("full-no-timeout", func(b *testing.B) {
		cfg := fullStack(b)
		cfg.AttemptTimeout = 0
		ic, err := rampartgrpc.NewUnaryClientInterceptor(cfg)
		require.NoError(b, err)
		benchUnary(b, false, grpc.WithUnaryInterceptor(ic))
	})
}
