package rampartgrpc_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/rampartgrpc"
	"github.com/rampart-go/rampart/retry"
)

// hopSeen is what a hop's handler saw of one call.
type hopSeen struct {
	at       time.Time // when the handler ran
	deadline time.Time
	crit     rampart.Criticality
	attempt  int
}

type hopLog struct {
	mu   sync.Mutex
	seen []hopSeen
}

func (l *hopLog) add(ctx context.Context) {
	d, _ := ctx.Deadline()
	l.mu.Lock()
	l.seen = append(l.seen, hopSeen{at: time.Now(), deadline: d, crit: rampart.CriticalityOf(ctx), attempt: rampart.AttemptOf(ctx)})
	l.mu.Unlock()
}

func propagatingServer(t *testing.T, maxTimeout time.Duration) grpc.ServerOption {
	t.Helper()
	pl, err := rampartgrpc.PropagatedLayer(rampartgrpc.PropagateConfig{Trusted: func(context.Context) bool { return true }, MaxTimeout: maxTimeout})
	require.NoError(t, err)
	ic, err := rampartgrpc.NewUnaryServerInterceptor(rampartgrpc.ServerConfig{Layers: []rampartgrpc.ServerLayer{pl}})
	require.NoError(t, err)
	return grpc.UnaryInterceptor(ic)
}

func retryingClient(t *testing.T) grpc.DialOption {
	t.Helper()
	ic, err := rampartgrpc.NewUnaryClientInterceptor(rampartgrpc.ClientConfig{Retry: rampartgrpc.RetryConfig{
		MaxAttempts: 3, Budget: budget.Always, Methods: rampartgrpc.Methods(unaryMethod),
		Backoff: retry.BackoffFunc(func(int, time.Duration) time.Duration { return 0 }),
	}})
	require.NoError(t, err)
	return grpc.WithUnaryInterceptor(ic)
}

// Across two real grpc-go hops (caller → A → B, each client retrying up
// to 3 attempts, B always UNAVAILABLE), over TCP and bufconn: the deadline
// stays true (B's time left is no more than A's, to grpc-timeout's
// resolution; A's deadline is no later than the caller's and capped by
// A's MaxTimeout), the criticality reaches B, and a hop serving
// a retry does not retry: A sees 3 calls, B 5 (not 9), numbered as sent.
func TestPropagate_PG4_TwoHops(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		var atA, atB hopLog
		b := start(t, n, &testServer{unary: func(ctx context.Context, _ int) (*testgrpc.SimpleResponse, error) {
			atB.add(ctx)
			return nil, status.Error(codes.Unavailable, "down")
		}}, []grpc.ServerOption{propagatingServer(t, 0)}, retryingClient(t))
		bClient := b.tc // A's client of B, retrying
		a := start(t, n, &testServer{unary: func(ctx context.Context, _ int) (*testgrpc.SimpleResponse, error) {
			atA.add(ctx)
			return bClient.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		}}, []grpc.ServerOption{propagatingServer(t, time.Minute)}, retryingClient(t))

		ctx, cancel := context.WithTimeout(rampart.WithCriticality(context.Background(), rampart.Critical), 2*time.Minute)
		defer cancel()
		callerDeadline, _ := ctx.Deadline()
		_, err := a.tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))

		require.Len(t, atA.seen, 3)
		require.Len(t, atB.seen, 5)
		var attemptsA, attemptsB []int
		for _, s := range atA.seen {
			attemptsA = append(attemptsA, s.attempt)
			assert.Equal(t, rampart.Critical, s.crit)
			assert.False(t, s.deadline.After(callerDeadline), "A's deadline is the caller's or earlier")
			assert.False(t, s.deadline.After(s.at.Add(time.Minute)), "A's deadline is capped by its MaxTimeout, from the call's arrival")
		}
		// A's first call sent B's first three (A retried it), its
		// retries one each. A deadline travels as the time left
		// (grpc-timeout), so B's is later than A's by the call's time in
		// transit, however long a loaded machine takes: what stays true
		// is the time left, which at B's handler is no more than A had
		// left at its handler, to grpc-timeout's resolution (grpc-go
		// rounds it up to its unit, a millisecond here).
		sentBy := []hopSeen{atA.seen[0], atA.seen[0], atA.seen[0], atA.seen[1], atA.seen[2]}
		for i, s := range atB.seen {
			attemptsB = append(attemptsB, s.attempt)
			assert.Equal(t, rampart.Critical, s.crit)
			require.False(t, s.deadline.IsZero())
			leftB, leftA := s.deadline.Sub(s.at), sentBy[i].deadline.Sub(sentBy[i].at)
			assert.LessOrEqual(t, leftB, leftA+time.Millisecond, "B's time left is no more than A's, at B's call %d", i)
		}
		assert.Equal(t, []int{0, 2, 3}, attemptsA)
		assert.Equal(t, []int{0, 2, 3, 2, 3}, attemptsB)
	})
}

// Metadata from a peer that is not trusted is ignored; MaxTimeout still
// caps the deadline.
func TestPropagate_PG2_UntrustedPeer(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		var seen hopLog
		pl, err := rampartgrpc.PropagatedLayer(rampartgrpc.PropagateConfig{MaxTimeout: time.Second})
		require.NoError(t, err)
		ic, err := rampartgrpc.NewUnaryServerInterceptor(rampartgrpc.ServerConfig{Layers: []rampartgrpc.ServerLayer{pl}})
		require.NoError(t, err)
		e := start(t, n, &testServer{unary: func(ctx context.Context, _ int) (*testgrpc.SimpleResponse, error) {
			seen.add(ctx)
			return &testgrpc.SimpleResponse{}, nil
		}}, []grpc.ServerOption{grpc.UnaryInterceptor(ic)})
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, rampartgrpc.CriticalityKey, "critical", rampartgrpc.AttemptKey, "2")
		_, err = e.tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		require.Len(t, seen.seen, 1)
		assert.Equal(t, rampart.DefaultCriticality, seen.seen[0].crit)
		assert.Zero(t, seen.seen[0].attempt)
		assert.True(t, seen.seen[0].deadline.Before(time.Now().Add(time.Second)), "capped at 1s from arrival")
		_, err = rampartgrpc.PropagatedLayer(rampartgrpc.PropagateConfig{MaxTimeout: -1})
		assert.ErrorContains(t, err, "PropagateConfig.MaxTimeout must be >= 0")
	})
}

// A negative grpc-retry-pushback-ms from B (gRFC A6: do not retry) is
// obeyed by A's retrying client across two real hops: each of the
// caller's 3 attempts at A makes exactly one attempt at B.
func TestPropagate_PG5_NegativePushbackTwoHops(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		var atA, atB hopLog
		b := start(t, n, &testServer{unary: func(ctx context.Context, _ int) (*testgrpc.SimpleResponse, error) {
			atB.add(ctx)
			_ = grpc.SetTrailer(ctx, metadata.Pairs(rampartgrpc.PushbackKey, "-1"))
			return nil, status.Error(codes.Unavailable, "overloaded; do not retry")
		}}, nil, retryingClient(t))
		a := start(t, n, &testServer{unary: func(ctx context.Context, _ int) (*testgrpc.SimpleResponse, error) {
			atA.add(ctx)
			return b.tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		}}, nil, retryingClient(t))
		_, err := a.tc.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Len(t, atA.seen, 3)
		assert.Len(t, atB.seen, 3)
	})
}
