package rampartgrpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartgrpc"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/timeout"
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
	t.Run("may be retried, with an attempt timeout", func(t *testing.T) {
		// context.WithDeadlineCause's 4 (its context, cancel func, timer
		// and the timer's callback) and the attempt's trailer and options.
		ic, err := rampartgrpc.NewUnaryClientInterceptor(fullStack(t))
		require.NoError(t, err)
		ctx := context.Background()
		assert.Equal(t, 5.0, testing.AllocsPerRun(1000, func() { _ = ic(ctx, unaryMethod, nil, nil, nil, invoker) }))
	})
	t.Run("one breaker", func(t *testing.T) {
		ic, err := rampartgrpc.NewUnaryClientInterceptor(rampartgrpc.ClientConfig{Breaker: newBreaker(t, circuitbreaker.Config{})})
		require.NoError(t, err)
		ctx := t.Context()
		assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = ic(ctx, unaryMethod, nil, nil, nil, invoker) }))
	})
}

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

func TestUnary_GR1_RetriesUnavailableOfSafeMethods(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		e := start(t, n, &testServer{unary: failWith(codes.Unavailable, 2)}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t)},
		}))
		resp, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		assert.Equal(t, "ok", resp.GetUsername())
		assert.Equal(t, int32(3), e.srv.calls.Load())
	})
}

func TestUnary_GR1_UnsafeMethodSentOnce(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		e := start(t, n, &testServer{unary: failWith(codes.Unavailable, 2)}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods("/other/Method"), Backoff: noWait(t)},
		}))
		_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, int32(1), e.srv.calls.Load())
	})
}

func TestUnary_GR1_OtherCodesNotRetried(t *testing.T) {
	for _, code := range []codes.Code{codes.Internal, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Unknown, codes.Aborted, codes.NotFound} {
		t.Run(code.String(), func(t *testing.T) {
			e := start(t, networks[0], &testServer{unary: failWith(code, 2)}, nil, unaryClient(t, rampartgrpc.ClientConfig{
				Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t)},
			}))
			_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
			assert.Equal(t, code, status.Code(err))
			assert.Equal(t, int32(1), e.srv.calls.Load())
		})
	}
}

func TestUnary_GR3_CallerCancellationIgnored(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		require.NoError(t, err)
		entered := make(chan struct{})
		e := start(t, n, &testServer{unary: func(ctx context.Context, _ int) (*testgrpc.SimpleResponse, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		}}, nil, unaryClient(t, rampartgrpc.ClientConfig{Breaker: br}))
		ctx, cancel := context.WithCancel(t.Context())
		go func() { <-entered; cancel() }()
		_, err = e.tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Canceled, status.Code(err))
		assert.Equal(t, circuitbreaker.Closed, br.State().State)
	})
}

func TestUnary_GR4_OpenBreakerRefusesWithUnavailable(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		require.NoError(t, err)
		e := start(t, n, &testServer{unary: failWith(codes.Internal, 100)}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Breaker: br,
			Retry:   rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t)},
		}))
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Internal, status.Code(err))
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
		assert.Equal(t, int32(1), e.srv.calls.Load())
	})
}

func TestUnary_GR4_OpenBreakerEndsRetries(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
	require.NoError(t, err)
	e := start(t, networks[0], &testServer{unary: failWith(codes.Unavailable, 100)}, nil, unaryClient(t, rampartgrpc.ClientConfig{
		Breaker: br,
		Retry:   rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t), MaxAttempts: 5},
	}))
	_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
	assert.Equal(t, int32(2), e.srv.calls.Load())
}

func TestUnary_GR5_BreakerPerMethod(t *testing.T) {
	g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}}})
	require.NoError(t, err)
	e := start(t, networks[0], &testServer{unary: failWith(codes.Internal, 1)}, nil, unaryClient(t, rampartgrpc.ClientConfig{Breakers: g}))
	_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
	assert.Equal(t, codes.Internal, status.Code(err))
	_, err = e.tc.EmptyCall(t.Context(), &testgrpc.Empty{})
	assert.Equal(t, codes.Unimplemented, status.Code(err), "another method has its own breaker")
	_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
	assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
	assert.Equal(t, circuitbreaker.Open, g.Breaker(unaryMethod).State().State)
	assert.Equal(t, circuitbreaker.Closed, g.Breaker("/grpc.testing.TestService/EmptyCall").State().State)
}

func TestUnary_GR5_BreakerPerTarget(t *testing.T) {
	g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}}})
	require.NoError(t, err)
	e := start(t, networks[0], &testServer{unary: failWith(codes.Internal, 1)}, nil, unaryClient(t, rampartgrpc.ClientConfig{Breakers: g, BreakerKey: rampartgrpc.PerTarget}))
	_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
	assert.Equal(t, codes.Internal, status.Code(err))
	_, err = e.tc.EmptyCall(t.Context(), &testgrpc.Empty{})
	assert.ErrorIs(t, err, circuitbreaker.ErrOpen, "every method of the target shares its breaker")
	assert.Equal(t, circuitbreaker.Open, g.Breaker("passthrough:///bufconn").State().State)
}

func TestUnary_GR6_AttemptTimeoutIsDeadlineExceededAndFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
		require.NoError(t, err)
		e := start(t, networks[0], &testServer{unary: func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error) {
			if n == 1 {
				<-ctx.Done() // the server hangs
				return nil, ctx.Err()
			}
			return &testgrpc.SimpleResponse{Username: "ok"}, nil
		}}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Breaker:        br,
			AttemptTimeout: 300 * time.Millisecond,
		}))
		begin := time.Now()
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, 300*time.Millisecond, time.Since(begin))
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		assert.Equal(t, 1, br.State().Counts.ConsecutiveFailures)
	})
}

// An attempt that runs out of AttemptTimeout is retried by default, as
// over HTTP; the next attempt is answered.
func TestUnary_GR6_TimedOutAttemptRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 5}})
		require.NoError(t, err)
		e := start(t, networks[0], &testServer{unary: func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error) {
			if n == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &testgrpc.SimpleResponse{Username: "ok"}, nil
		}}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Breaker:        br,
			AttemptTimeout: 300 * time.Millisecond,
			Retry:          rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t)},
		}))
		begin := time.Now()
		resp, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		assert.Equal(t, "ok", resp.GetUsername())
		assert.Equal(t, 300*time.Millisecond, time.Since(begin))
		assert.Equal(t, int32(2), e.srv.calls.Load())
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, br.State(), "the success after the timeout ends the run of failures")
	})
}

// Neither the caller's own deadline nor a DEADLINE_EXCEEDED the server
// sends is retried by default: the call may have done its work.
func TestUnary_GR6_OtherDeadlinesNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, networks[0], &testServer{unary: func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error) {
			if n == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return nil, status.Error(codes.DeadlineExceeded, "the server's own deadline")
		}}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			AttemptTimeout: time.Second,
			Retry:          rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t)},
		}))
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := e.tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.NotErrorIs(t, err, timeout.ErrTimeout, "the caller's deadline, not the attempt's")
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Equal(t, int32(2), e.srv.calls.Load(), "one attempt each")
	})
}

func TestUnary_GR1_BudgetBoundsRetries(t *testing.T) {
	b, err := budget.New(budget.Config{MinPerSecond: budget.NoFloor, Ratio: 0.5})
	require.NoError(t, err)
	e := start(t, networks[0], &testServer{unary: failWith(codes.Unavailable, 1000)}, nil, unaryClient(t, rampartgrpc.ClientConfig{
		Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t), Budget: b, MaxAttempts: 10},
	}))
	for range 4 {
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))
	}
	// Four calls earn two retries.
	assert.Equal(t, int32(6), e.srv.calls.Load())
}

func TestUnary_GR7_HedgeAnswersFromTheFasterCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, networks[0], &testServer{unary: func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error) {
			if n == 1 {
				<-ctx.Done() // the first copy hangs until the hedge wins
				return nil, ctx.Err()
			}
			return &testgrpc.SimpleResponse{Username: "hedge"}, nil
		}}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod)},
			Hedge: &rampartgrpc.HedgeConfig{Budget: budget.Always, Delay: 40 * time.Millisecond},
		}))
		begin := time.Now()
		resp, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		assert.Equal(t, "hedge", resp.GetUsername())
		assert.Equal(t, 40*time.Millisecond, time.Since(begin))
		assert.Equal(t, int32(2), e.srv.calls.Load())
	})
}

// A copy whose call panics below rampart's interceptor (here in the next
// interceptor of the chain, on the copy's goroutine) makes the caller's
// call panic with a *rampart.PanicError once the original has been
// cancelled and awaited, as a panic of the original does; before, it
// ended the program from the copy's goroutine (hedge HG1).
func TestUnary_HG1_CopyPanicReachesTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ic, err := rampartgrpc.NewUnaryClientInterceptor(rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod)},
			Hedge: &rampartgrpc.HedgeConfig{Budget: budget.Always, Delay: 40 * time.Millisecond},
		})
		require.NoError(t, err)
		var attempts atomic.Int32
		panicky := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if attempts.Add(1) == 2 {
				panic("copy exploded")
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		e := start(t, networks[0], &testServer{unary: func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error) {
			<-ctx.Done() // the original hangs until it is cancelled
			return nil, ctx.Err()
		}}, nil, grpc.WithChainUnaryInterceptor(ic, panicky))

		begin := time.Now()
		var recovered any
		func() {
			defer func() { recovered = recover() }()
			_, _ = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		}()

		pe, ok := recovered.(*rampart.PanicError)
		require.True(t, ok, "panic value %#v", recovered)
		assert.Equal(t, "copy exploded", pe.Value)
		assert.Equal(t, 40*time.Millisecond, time.Since(begin), "the original was cancelled at the panic and awaited")
		assert.Equal(t, int32(1), e.srv.calls.Load())
	})
}

// A copy answered with a negative grpc-retry-pushback-ms ends the
// hedging (gRFC A6: no further hedged requests; PG7): of three copies 10ms
// apart, the second pushes back at once, the third is never sent, and
// the first answers at 100ms.
func TestUnary_PG7_NegativePushbackEndsTheHedging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, networks[0], &testServer{unary: func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error) {
			if n == 2 {
				return pushingBack(1, "-1")(ctx, 1)
			}
			time.Sleep(100 * time.Millisecond)
			return &testgrpc.SimpleResponse{Username: fmt.Sprint("copy ", n)}, nil
		}}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod)},
			Hedge: &rampartgrpc.HedgeConfig{Budget: budget.Always, Delay: 10 * time.Millisecond, MaxAttempts: 3},
		}))
		begin := time.Now()
		resp, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		assert.Equal(t, "copy 1", resp.GetUsername())
		assert.Equal(t, 100*time.Millisecond, time.Since(begin))
		assert.Equal(t, int32(2), e.srv.calls.Load(), "no third copy")
	})
}

func TestUnary_GR7_UnsafeMethodNotHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, networks[0], &testServer{unary: func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error) {
			time.Sleep(time.Second)
			return &testgrpc.SimpleResponse{Username: "slow"}, nil
		}}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Hedge: &rampartgrpc.HedgeConfig{Budget: budget.Always, Delay: 40 * time.Millisecond},
		}))
		resp, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		assert.Equal(t, "slow", resp.GetUsername())
		assert.Equal(t, int32(1), e.srv.calls.Load())
	})
}

func TestClientConfig_BadFieldsNamed(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		cfg  rampartgrpc.ClientConfig
		// want is the whole message when exact is set; otherwise its
		// start, the rest being the message of package retry or hedge.
		want  string
		exact bool
	}{
		{name: "both breakers", cfg: rampartgrpc.ClientConfig{Breaker: br, Breakers: g}, want: "rampartgrpc: ClientConfig.Breaker and ClientConfig.Breakers are both set; set at most one", exact: true},
		{name: "negative timeout", cfg: rampartgrpc.ClientConfig{AttemptTimeout: -1}, want: "rampartgrpc: ClientConfig.AttemptTimeout must be >= 0 (0 means no per-attempt timeout), got -1ns", exact: true},
		{name: "negative attempts", cfg: rampartgrpc.ClientConfig{Retry: rampartgrpc.RetryConfig{MaxAttempts: -1}}, want: "rampartgrpc: ClientConfig.Retry: retry: MaxAttempts must be"},
		{name: "hedge without budget", cfg: rampartgrpc.ClientConfig{Hedge: &rampartgrpc.HedgeConfig{}}, want: "rampartgrpc: ClientConfig.Hedge: hedge: Budget must not be nil"},
		{name: "nil limiter", cfg: rampartgrpc.ClientConfig{Limit: (*concurrency.Limiter)(nil)}, want: "rampartgrpc: ClientConfig.Limit: "},
		{name: "negative hedge delay", cfg: rampartgrpc.ClientConfig{Hedge: &rampartgrpc.HedgeConfig{Budget: budget.Always, Delay: -1}}, want: "rampartgrpc: ClientConfig.Hedge: hedge: Delay must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, unaryErr := rampartgrpc.NewUnaryClientInterceptor(tc.cfg)
			_, streamErr := rampartgrpc.NewStreamClientInterceptor(tc.cfg)
			for _, err := range []error{unaryErr, streamErr} {
				require.Error(t, err)
				if tc.exact {
					assert.EqualError(t, err, tc.want)
				} else {
					assert.True(t, strings.HasPrefix(err.Error(), tc.want), "%q starts with %q", err, tc.want)
				}
			}
		})
	}
}

// A zero circuitbreaker.Group is a usable default group: a unary call and
// a stream through Breakers each get their method's breaker, named after it.
func TestClient_GR5_ZeroGroupIsDefaultGroup(t *testing.T) {
	var g circuitbreaker.Group[string]
	e := start(t, networks[0], &testServer{}, nil,
		unaryClient(t, rampartgrpc.ClientConfig{Breakers: &g}),
		streamClient(t, rampartgrpc.ClientConfig{Breakers: &g}))
	_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	stream, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, io.EOF, err)
	assert.Equal(t, []circuitbreaker.KeyState[string]{
		{Key: unaryMethod, Snapshot: circuitbreaker.Snapshot{Name: unaryMethod}},
		{Key: streamMethod, Snapshot: circuitbreaker.Snapshot{Name: streamMethod}},
	}, g.States())
}

// A method Skip names bypasses an open breaker, and nothing it does is
// counted; every other method is refused.
func TestUnary_GR17_SkipBypassesOpenBreaker(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
		require.NoError(t, err)
		p, err := br.TryAcquire()
		require.NoError(t, err)
		p.Failure(errors.New("tripped"))
		b := new(countingBudget)
		e := start(t, n, &testServer{}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Skip:    rampartgrpc.Methods(healthMethod),
			Breaker: br,
			Retry:   rampartgrpc.RetryConfig{Budget: b},
		}))
		for range 3 {
			resp, err := e.hc.Check(t.Context(), &healthgrpc.HealthCheckRequest{})
			require.NoError(t, err, "the health check reaches the server")
			assert.Equal(t, healthgrpc.HealthCheckResponse_SERVING, resp.GetStatus())
		}
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
		assert.Equal(t, int32(0), e.srv.calls.Load())
		assert.Equal(t, circuitbreaker.Open, br.State().State)
		assert.Equal(t, int32(1), b.deposits.Load(), "only the refused call deposited")
	})
}

// A full client-side limit refuses the call unsent with RESOURCE_EXHAUSTED
// and a pushback: a RetryAfter and a RetryInfo detail. The refusal is not
// retried, and the breaker does not count it.
func TestUnary_GR18_LimitRefusesWithResourceExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.New(1)
		require.NoError(t, err)
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		require.NoError(t, err)
		entered, release := make(chan struct{}), make(chan struct{})
		e := start(t, networks[0], &testServer{unary: func(_ context.Context, n int) (*testgrpc.SimpleResponse, error) {
			if n == 1 {
				entered <- struct{}{}
				<-release
			}
			return &testgrpc.SimpleResponse{Username: "ok"}, nil
		}}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Limit:   lim,
			Breaker: br,
			Retry: rampartgrpc.RetryConfig{
				Methods:   rampartgrpc.Methods(unaryMethod),
				Backoff:   noWait(t),
				Retryable: func(error) bool { return true },
			},
		}))
		first := make(chan error)
		go func() {
			_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
			first <- err
		}()
		<-entered

		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		assert.ErrorIs(t, err, concurrency.ErrLimited)
		w, ok := errors.AsType[interface {
			error
			RetryAfter() time.Duration
		}](err)
		require.True(t, ok)
		assert.Equal(t, rampartgrpc.DefaultPushback, w.RetryAfter(), "a Limiter has no estimate: the default pushback")
		details := status.Convert(err).Details()
		require.Len(t, details, 1)
		info, ok := details[0].(*errdetails.RetryInfo)
		require.True(t, ok, "%T", details[0])
		assert.Equal(t, rampartgrpc.DefaultPushback, info.GetRetryDelay().AsDuration())

		close(release)
		require.NoError(t, <-first)
		assert.Equal(t, int32(1), e.srv.calls.Load(), "the refused call was neither sent nor retried")
		assert.Equal(t, circuitbreaker.Closed, br.State().State, "one failure would have opened it")
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err, "the slot was given back")
	})
}

// A hedged copy the limit refuses is no answer: the original's is.
func TestUnary_GR18_LimitRefusedHedgeIsNoAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.New(1)
		require.NoError(t, err)
		e := start(t, networks[0], &testServer{unary: func(context.Context, int) (*testgrpc.SimpleResponse, error) {
			time.Sleep(100 * time.Millisecond)
			return &testgrpc.SimpleResponse{Username: "original"}, nil
		}}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Limit: lim,
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod)},
			Hedge: &rampartgrpc.HedgeConfig{Budget: budget.Always, Delay: 10 * time.Millisecond},
		}))
		begin := time.Now()
		resp, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		assert.Equal(t, "original", resp.GetUsername())
		assert.Equal(t, 100*time.Millisecond, time.Since(begin))
		assert.Equal(t, int32(1), e.srv.calls.Load())
	})
}

// retryPolicy is a service config that has grpc-go retry UNAVAILABLE up to
// 4 attempts of every TestService method.
const retryPolicy = `{"methodConfig": [{
	"name": [{"service": "grpc.testing.TestService"}],
	"retryPolicy": {
		"maxAttempts": 4,
		"initialBackoff": "0.01s",
		"maxBackoff": "0.01s",
		"backoffMultiplier": 1,
		"retryableStatusCodes": ["UNAVAILABLE"]
	}
}]}`

// attemptsWith returns how many attempts an always-UNAVAILABLE server sees
// for one call, and the breaker's run of failures after it.
func attemptsWith(t *testing.T, cfg rampartgrpc.ClientConfig, dialOpts ...grpc.DialOption) (int32, int) {
	var calls int32
	var failures int
	synctest.Test(t, func(t *testing.T) {
		br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 100}})
		cfg.Breaker = br
		cfg.Retry.Backoff = noWait(t)
		e := start(t, networks[0], &testServer{unary: failWith(codes.Unavailable, 1000)}, nil,
			append(dialOpts, grpc.WithDefaultServiceConfig(retryPolicy), unaryClient(t, cfg))...)
		_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))
		calls = e.srv.calls.Load()
		failures = br.State().Counts.ConsecutiveFailures
	})
	return calls, failures
}

func TestRetryPolicy_GR15_RecommendedSetupDoesNotMultiplyAttempts(t *testing.T) {
	// rampart retries, grpc-go's own retries disabled: 3 attempts, each
	// seen by the breaker.
	calls, failures := attemptsWith(t, rampartgrpc.ClientConfig{
		Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), MaxAttempts: 3},
	}, grpc.WithDisableRetry())
	assert.Equal(t, int32(3), calls)
	assert.Equal(t, 3, failures)
}

func TestRetryPolicy_GR15_GrpcRetriesAloneSeenAsOneOutcome(t *testing.T) {
	// grpc-go's retryPolicy alone (no method declared to rampart): 4
	// attempts inside the invoker, one outcome for the breaker.
	calls, failures := attemptsWith(t, rampartgrpc.ClientConfig{})
	assert.Equal(t, int32(4), calls)
	assert.Equal(t, 1, failures)
}

func TestRetryPolicy_GR15_BothRetryingMultiplies(t *testing.T) {
	// What the recommendation avoids: each of rampart's 3 attempts runs
	// grpc-go's 4.
	calls, failures := attemptsWith(t, rampartgrpc.ClientConfig{
		Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), MaxAttempts: 3},
	})
	assert.Equal(t, int32(12), calls)
	assert.Equal(t, 3, failures)
}

// Every unary call and every stream through the client's breaker is
// reported once with the outcome the breaker was given, however the stream
// ends: the counts by outcome are those of what the callers got, against a
// real grpc-go server.
func TestClient_EV12_EveryCallAndStreamReportedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var obs observetest.Counter
		sw := &circuitbreaker.Switch{}
		br := newBreaker(t, circuitbreaker.Config{Name: "backend", Policy: circuitbreaker.Consecutive{Failures: 100}, Observer: &obs, Switch: sw})
		cfg := rampartgrpc.ClientConfig{Breaker: br, Retry: rampartgrpc.RetryConfig{MaxAttempts: 1}}
		srv := &testServer{
			unary: func(_ context.Context, n int) (*testgrpc.SimpleResponse, error) {
				if n%2 == 0 {
					return nil, status.Error(codes.Internal, "broke")
				}
				return &testgrpc.SimpleResponse{}, nil
			},
			stream: func(s testgrpc.TestService_StreamingOutputCallServer, n int) error {
				switch n {
				case 1:
					return sendThen(2, nil)(s, n) // ends with EOF
				case 2:
					return sendThen(1, status.Error(codes.Internal, "broke"))(s, n)
				}
				<-s.Context().Done() // waits for the caller to go away
				return s.Context().Err()
			},
		}
		e := start(t, networks[0], srv, nil, unaryClient(t, cfg), streamClient(t, cfg))
		got := map[string]int{"success": 0, "failure": 0, "ignored": 0, "rejected": 0}
		ctx := t.Context()

		for range 4 {
			_, err := e.tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
			if err != nil {
				require.Equal(t, codes.Internal, status.Code(err))
				got["failure"]++
			} else {
				got["success"]++
			}
		}

		// drain reads a new stream to its end and returns how it ended.
		drain := func() error {
			st, err := e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
			require.NoError(t, err)
			for err == nil {
				_, err = st.Recv()
			}
			return err
		}
		require.Equal(t, io.EOF, drain()) // a success
		got["success"]++
		require.Equal(t, codes.Internal, status.Code(drain())) // a failure
		got["failure"]++

		// Cancelled by the caller while reading: ignored.
		cctx, cancel := context.WithCancel(ctx)
		st, err := e.tc.StreamingOutputCall(cctx, &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		cancel()
		_, err = st.Recv()
		require.Equal(t, codes.Canceled, status.Code(err))
		got["ignored"]++

		// Abandoned: never read; reported when the caller's context ends.
		actx, abandon := context.WithCancel(ctx)
		_, err = e.tc.StreamingOutputCall(actx, &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		abandon()
		synctest.Wait()
		got["ignored"]++

		// Refused by the open breaker, unary and stream.
		sw.ForceOpen(nil)
		_, err = e.tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		require.ErrorIs(t, err, circuitbreaker.ErrOpen)
		got["rejected"]++
		_, err = e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
		require.ErrorIs(t, err, circuitbreaker.ErrOpen)
		got["rejected"]++
		sw.Release()

		require.Equal(t, map[string]int{"success": 3, "failure": 3, "ignored": 2, "rejected": 2}, got)
		require.Equal(t, got, obs.Outcomes())
	})
}

// The retry, hedge, limit and attempt timeout of the interceptors take a
// Name and an Observer as ramparthttp's do; a stream's retry loop that
// stops because the call was committed says so.
func TestClient_GR19_LayersReportWithTheirNames(t *testing.T) {
	var rec observetest.Recorder
	srv := &testServer{
		stream: func(s testgrpc.TestService_StreamingOutputCallServer, n int) error {
			if n == 1 {
				return status.Error(codes.Unavailable, "refused before the headers")
			}
			return sendThen(1, nil)(s, n)
		},
		unary: func(ctx context.Context, _ int) (*testgrpc.SimpleResponse, error) {
			<-ctx.Done() // runs out of the attempt timeout
			return nil, ctx.Err()
		},
	}
	cfg := rampartgrpc.ClientConfig{
		Retry:          rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(streamMethod), Backoff: noWait(t), Name: "backend", Observer: &rec},
		AttemptTimeout: 50 * time.Millisecond,
		Name:           "backend-attempts",
		Observer:       &rec,
	}
	// The attempt timeout also bounds a stream's opening, and an opening
	// that runs out of it is retried: on a loaded machine 50ms may not be
	// enough, so the stream's stack, the same but for its timeout, gives
	// it a minute. The unary call runs out of its 50ms whatever the speed.
	scfg := cfg
	scfg.AttemptTimeout = time.Minute
	e := start(t, networks[0], srv, nil, unaryClient(t, cfg), streamClient(t, scfg))
	st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	for err == nil {
		_, err = st.Recv()
	}
	require.Equal(t, io.EOF, err)
	_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
	require.Equal(t, codes.DeadlineExceeded, status.Code(err))

	var got []string
	for _, ev := range rec.Events() {
		line := ev.Source.String() + " " + ev.Name + " " + ev.Kind.String()
		if ev.Err != nil && ev.Kind == observe.RetryEnd {
			line += ": " + ev.Err.Error()
		}
		got = append(got, line)
	}
	require.Equal(t, []string{
		"retry backend retrying",
		"retry backend retry-end: " + rampartgrpc.ErrCommitted.Error(),
		"timeout backend-attempts timeout-fired",
	}, got)
}

// Over real grpc-go connections, the client's recorder judges each
// attempt as its breaker does: UNAVAILABLE a failure, RESOURCE_EXHAUSTED
// ignored, a retry marked with its attempt, a refusal recorded as refused.
func TestRecorder_GR_JudgesAsTheBreaker(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		var out bytes.Buffer
		rec, err := record.New(&out, record.Config{})
		require.NoError(t, err)
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Hour})
		require.NoError(t, err)
		srv := &testServer{unary: func(_ context.Context, n int) (*testgrpc.SimpleResponse, error) {
			switch n {
			case 1:
				return &testgrpc.SimpleResponse{}, nil
			case 2:
				return nil, status.Error(codes.ResourceExhausted, "slow down")
			}
			return nil, status.Error(codes.Unavailable, "down")
		}}
		e := start(t, n, srv, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Breaker:  br,
			Recorder: rec,
			Retry:    rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t), Budget: budget.Always},
		}))
		for range 4 {
			_, _ = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		}
		require.NoError(t, rec.Close())
		type line struct {
			outcome record.Outcome
			class   string
			attempt int
		}
		var got []line
		for _, e := range readTrace(t, out.String()) {
			assert.Equal(t, unaryMethod, e.Key)
			got = append(got, line{e.Outcome, e.Class, e.Attempt})
		}
		assert.Equal(t, []line{
			{record.Success, "", 1},
			{record.Ignored, "error", 1},
			{record.Failure, "error", 1},
			{record.Failure, "error", 2},
			{record.Refused, "open", 3},
			{record.Refused, "open", 1},
		}, got)
		assert.Equal(t, int32(4), srv.calls.Load(), "refused attempts were not sent")
	})
}

// Methods reports true for exactly the names given, whether it compares
// them one by one (a few) or looks them up (many), and the caller's slice
// may change afterwards.
func TestMethods_GR1_ExactNames(t *testing.T) {
	for _, n := range []int{0, 1, 8, 9, 40} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("/pkg.Service/M%d", i)
		}
		safe := rampartgrpc.Methods(names...)
		for i := range names {
			assert.True(t, safe(names[i]), "%d names: %s", n, names[i])
			names[i] = "/changed/" + names[i]
		}
		for i := range n {
			assert.True(t, safe(fmt.Sprintf("/pkg.Service/M%d", i)), "%d names: the caller's slice was copied", n)
		}
		assert.False(t, safe(fmt.Sprintf("/pkg.Service/M%d", n)), "%d names", n)
		assert.False(t, safe("/pkg.Service/M"), "%d names: a prefix", n)
		assert.False(t, safe(""), "%d names", n)
	}
}

// Two deadlines that both read DEADLINE_EXCEEDED to the caller, told
// apart on every view: the attempt's own AttemptTimeout (a timeout event,
// a retry for a timeout, class "timeout" in the trace) and a
// DEADLINE_EXCEEDED the server sends (its own downstream ran out: not
// retried, class "error", no timeout event). The breaker counts both as
// failures, and the observer, the trace and the breaker agree on two.
func TestUnary_GR6_DeadlinesToldApartOnEveryView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		rec, err := record.New(&out, record.Config{})
		require.NoError(t, err)
		var seen observetest.Recorder
		br, err := circuitbreaker.New(circuitbreaker.Config{Name: "api", Policy: circuitbreaker.Consecutive{Failures: 5}, Observer: &seen})
		require.NoError(t, err)
		e := start(t, networks[0], &testServer{unary: func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error) {
			if n == 1 {
				<-ctx.Done() // hangs past the attempt's deadline
				return nil, ctx.Err()
			}
			return nil, status.Error(codes.DeadlineExceeded, "the server's own downstream ran out of time")
		}}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Breaker: br, Recorder: rec, AttemptTimeout: 300 * time.Millisecond, Name: "api", Observer: &seen,
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t), Budget: budget.Always, Name: "api", Observer: &seen},
		}))
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.NotErrorIs(t, err, timeout.ErrTimeout, "the caller gets the server's answer")
		require.NoError(t, rec.Close())

		var kinds []string
		for _, ev := range seen.Events() {
			kinds = append(kinds, ev.Source.String()+"."+ev.Kind.String())
		}
		assert.Equal(t, []string{"timeout.timeout-fired", "circuitbreaker.failure", "retry.retrying", "circuitbreaker.failure", "retry.retry-end"}, kinds)
		evs := seen.Events()
		assert.ErrorIs(t, evs[2].Err, timeout.ErrTimeout, "retried for the attempt's timeout")
		assert.NoError(t, evs[4].Err, "then stopped: the server's DEADLINE_EXCEEDED is not retried")
		assert.Equal(t, 2, br.State().Counts.ConsecutiveFailures)
		var lines []string
		for _, en := range readTrace(t, out.String()) {
			lines = append(lines, fmt.Sprintf("%s/%s/%d", en.Outcome, en.Class, en.Attempt))
		}
		assert.Equal(t, []string{"failure/timeout/1", "failure/error/2"}, lines)
	})
}
