package rampartgrpc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartgrpc"
)

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
