package rampartgrpc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartgrpc"
	"github.com/rampart-go/rampart/retry"
)

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
