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

func benchUnary(b *testing.B, dialOpts ...grpc.DialOption) {
	e := start(b, networks[0], &testServer{}, nil, dialOpts...)
	req := &testgrpc.SimpleRequest{}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.tc.UnaryCall(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnary(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchUnary(b) })
	b.Run("full", func(b *testing.B) {
		ic, err := rampartgrpc.NewUnaryClientInterceptor(fullStack(b))
		require.NoError(b, err)
		benchUnary(b, grpc.WithUnaryInterceptor(ic))
	})
	b.Run("full-no-timeout", func(b *testing.B) {
		cfg := fullStack(b)
		cfg.AttemptTimeout = 0
		ic, err := rampartgrpc.NewUnaryClientInterceptor(cfg)
		require.NoError(b, err)
		benchUnary(b, grpc.WithUnaryInterceptor(ic))
	})
}

func BenchmarkUnaryBareWithDeadline(b *testing.B) {
	e := start(b, networks[0], &testServer{}, nil)
	req := &testgrpc.SimpleRequest{}
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(b.Context(), time.Second)
		if _, err := e.tc.UnaryCall(ctx, req); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}
