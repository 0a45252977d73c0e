package rampartgrpc_test

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartgrpc"
)

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
	e := start(t, networks[0], srv, nil, unaryClient(t, cfg), streamClient(t, cfg))
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
