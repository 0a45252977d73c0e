package rampartgrpc_test

import (
	"context"
	"errors"
	"io"
	"strings"
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
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/rampartgrpc"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// noWait is a backoff of zero, for tests that count attempts.
func noWait(t *testing.T) retry.Backoff {
	b, err := retry.NewConstant(0)
	require.NoError(t, err)
	return b
}

func unaryClient(t *testing.T, cfg rampartgrpc.ClientConfig) grpc.DialOption {
	t.Helper()
	ic, err := rampartgrpc.NewUnaryClientInterceptor(cfg)
	require.NoError(t, err)
	return grpc.WithUnaryInterceptor(ic)
}

func failWith(code codes.Code, times int) func(context.Context, int) (*testgrpc.SimpleResponse, error) {
	return func(_ context.Context, n int) (*testgrpc.SimpleResponse, error) {
		if n <= times {
			return nil, status.Error(code, "injected")
		}
		return &testgrpc.SimpleResponse{Username: "ok"}, nil
	}
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

// pushingBack fails with UNAVAILABLE and the given pushback trailer values
// until the call numbered times.
func pushingBack(times int, values ...string) func(context.Context, int) (*testgrpc.SimpleResponse, error) {
	return func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error) {
		if n > times {
			return &testgrpc.SimpleResponse{Username: "ok"}, nil
		}
		md := metadata.MD{}
		for _, v := range values {
			md.Append(rampartgrpc.PushbackKey, v)
		}
		_ = grpc.SetTrailer(ctx, md)
		return nil, status.Error(codes.Unavailable, "pushing back")
	}
}

func TestUnary_GR2_NegativeOrMalformedPushbackStopsRetries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
	}{
		{name: "negative", values: []string{"-1"}},
		{name: "text", values: []string{"soon"}},
		{name: "fraction", values: []string{"1.5"}},
		{name: "empty", values: []string{""}},
		{name: "two values", values: []string{"1", "2"}},
		// gRFC A6: a signed 32-bit integer with no unneeded leading zeros.
		{name: "plus sign", values: []string{"+5"}},
		{name: "leading zero", values: []string{"0100"}},
		{name: "space", values: []string{" 5"}},
		{name: "past int32", values: []string{"2147483648"}},
		{name: "past int64", values: []string{"99999999999999999999"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachNetwork(t, func(t *testing.T, n network) {
				e := start(t, n, &testServer{unary: pushingBack(5, tc.values...)}, nil, unaryClient(t, rampartgrpc.ClientConfig{
					Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t)},
				}))
				_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
				assert.Equal(t, codes.Unavailable, status.Code(err))
				assert.Equal(t, int32(1), e.srv.calls.Load())
			})
		})
	}
}

func TestUnary_GR2_PushbackSetsTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var at []time.Duration
		start0 := time.Now()
		srv := &testServer{unary: func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error) {
			at = append(at, time.Since(start0))
			return pushingBack(2, "250")(ctx, n)
		}}
		b, err := retry.NewConstant(10 * time.Millisecond)
		require.NoError(t, err)
		e := start(t, networks[0], srv, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: b},
		}))
		start0 = time.Now()
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		assert.Equal(t, []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond}, at)
	})
}

// breakerCounts returns the breaker's run of consecutive failures, after
// one failure and then one call that ended with code: 0 if that call
// counted as a success, 1 if it was ignored, and the breaker is open (-1)
// if it counted as a failure.
func judged(t *testing.T, n network, code codes.Code) int {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
	require.NoError(t, err)
	e := start(t, n, &testServer{unary: func(context.Context, int) (*testgrpc.SimpleResponse, error) {
		if code == codes.OK {
			return &testgrpc.SimpleResponse{}, nil
		}
		return nil, status.Error(code, "injected")
	}}, nil, unaryClient(t, rampartgrpc.ClientConfig{Breaker: br}))
	p, err := br.TryAcquire()
	require.NoError(t, err)
	p.Failure(errors.New("first"))
	_, _ = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
	s := br.State()
	if s.State != circuitbreaker.Closed {
		return -1
	}
	return s.Counts.ConsecutiveFailures
}

func TestUnary_GR3_BreakerClassification(t *testing.T) {
	const failure, ignored, success = -1, 1, 0
	for _, tc := range []struct {
		code codes.Code
		want int
	}{
		{code: codes.OK, want: success},
		{code: codes.Unavailable, want: failure},
		{code: codes.DeadlineExceeded, want: failure},
		{code: codes.Internal, want: failure},
		{code: codes.Unknown, want: failure},
		{code: codes.DataLoss, want: failure},
		{code: codes.Canceled, want: failure}, // the server's, not the caller's
		{code: codes.ResourceExhausted, want: ignored},
		{code: codes.InvalidArgument, want: success},
		{code: codes.NotFound, want: success},
		{code: codes.PermissionDenied, want: success},
		{code: codes.Unimplemented, want: success},
		{code: codes.FailedPrecondition, want: success},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			eachNetwork(t, func(t *testing.T, n network) {
				assert.Equal(t, tc.want, judged(t, n, tc.code))
			})
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

func TestUnary_GR3_ClassifyConfigurable(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	require.NoError(t, err)
	e := start(t, networks[0], &testServer{unary: failWith(codes.NotFound, 1)}, nil, unaryClient(t, rampartgrpc.ClientConfig{
		Breaker: br,
		Classify: func(err error) rampart.Outcome {
			if status.Code(err) == codes.NotFound {
				return rampart.Failure
			}
			return rampartgrpc.Classify(err)
		},
	}))
	_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
	assert.Equal(t, codes.NotFound, status.Code(err))
	assert.Equal(t, circuitbreaker.Open, br.State().State)
}

func TestUnary_GR1_RetryableConfigurable(t *testing.T) {
	e := start(t, networks[0], &testServer{unary: failWith(codes.Aborted, 1)}, nil, unaryClient(t, rampartgrpc.ClientConfig{
		Retry: rampartgrpc.RetryConfig{
			Methods:   rampartgrpc.Methods(unaryMethod),
			Backoff:   noWait(t),
			Retryable: func(err error) bool { return status.Code(err) == codes.Aborted },
		},
	}))
	_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), e.srv.calls.Load())
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

// A pushback at the top of gRFC A6's range is a delay, capped by MaxHint
// like any long one: the retry comes MaxHint later.
func TestUnary_GR2_LargestPushbackCappedByMaxHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, networks[0], &testServer{unary: pushingBack(1, "2147483647")}, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t), MaxHint: 3 * time.Second},
		}))
		begin := time.Now()
		_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second, time.Since(begin))
		assert.Equal(t, int32(2), e.srv.calls.Load())
	})
}

// healthMethod is grpc-go's health check, which every server of the tests
// serves.
const healthMethod = "/grpc.health.v1.Health/Check"

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

// The server side's Skip lets a health check past a stack that refuses
// everything else, over unary calls and streams, and so does the tap's.
func TestServer_GR17_SkipBypassesTheLayers(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		shed, err := loadshed.NewLayer[rampartgrpc.ServerCall, any](loadshed.Config{Readiness: loadshed.ReadyFunc(func() bool { return false })})
		require.NoError(t, err)
		cfg := rampartgrpc.ServerConfig{Layers: []rampartgrpc.ServerLayer{shed}, Skip: rampartgrpc.Methods(healthMethod, streamMethod)}
		u, err := rampartgrpc.NewUnaryServerInterceptor(cfg)
		require.NoError(t, err)
		s, err := rampartgrpc.NewStreamServerInterceptor(cfg)
		require.NoError(t, err)
		th, err := rampartgrpc.NewTapHandle(rampartgrpc.TapConfig{Shed: loadshed.ReadyFunc(func() bool { return false }), Skip: rampartgrpc.Methods(healthMethod, streamMethod, unaryMethod)})
		require.NoError(t, err)
		e := start(t, n, &testServer{}, []grpc.ServerOption{grpc.UnaryInterceptor(u), grpc.StreamInterceptor(s), grpc.InTapHandle(th)})
		_, err = e.hc.Check(t.Context(), &healthgrpc.HealthCheckRequest{})
		require.NoError(t, err)
		stream, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		_, err = stream.Recv()
		assert.Equal(t, io.EOF, err)
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err), "past the tap, refused by the interceptor")
		assert.Equal(t, int32(0), e.srv.calls.Load())
		assert.Equal(t, int32(1), e.srv.streams.Load())
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
