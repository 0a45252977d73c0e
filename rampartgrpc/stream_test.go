package rampartgrpc_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartgrpc"
)

// trip opens br with one failure (its policy must trip on one, and its
// CoolDown be Immediate), so that it is half-open: the next call is a
// probe.
func trip(t *testing.T, br *circuitbreaker.Breaker) {
	t.Helper()
	p, err := br.TryAcquire()
	require.NoError(t, err)
	p.Failure(errors.New("trip"))
	require.Equal(t, circuitbreaker.HalfOpen, br.State().State)
}

func TestStream_GR8_BreakerJudgesFinalStatus(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		e := start(t, n, &testServer{stream: sendThen(2, status.Error(codes.Internal, "broke"))}, nil, streamClient(t, rampartgrpc.ClientConfig{Breaker: br}))
		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		for range 2 {
			_, err = st.Recv()
			require.NoError(t, err)
		}
		assert.Equal(t, circuitbreaker.Closed, br.State().State, "not judged before its end")
		_, err = st.Recv()
		assert.Equal(t, codes.Internal, status.Code(err))
		assert.Equal(t, circuitbreaker.Open, br.State().State)

		_, err = e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
		assert.Equal(t, int32(1), e.srv.streams.Load())
	})
}

func TestStream_GR8_EndOfStreamIsSuccess(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
		p, err := br.TryAcquire()
		require.NoError(t, err)
		p.Failure(errors.New("earlier"))
		e := start(t, n, &testServer{stream: sendThen(1, nil)}, nil, streamClient(t, rampartgrpc.ClientConfig{Breaker: br}))
		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		_, err = st.Recv()
		require.NoError(t, err)
		assert.Equal(t, 1, br.State().Counts.ConsecutiveFailures)
		_, err = st.Recv()
		assert.Equal(t, io.EOF, err)
		assert.Equal(t, 0, br.State().Counts.ConsecutiveFailures)
	})
}

func TestStream_GR8_OneResponseJudgedOnIt(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}})
		p, err := br.TryAcquire()
		require.NoError(t, err)
		p.Failure(errors.New("earlier"))
		e := start(t, n, &testServer{}, nil, streamClient(t, rampartgrpc.ClientConfig{Breaker: br}))
		st, err := e.tc.StreamingInputCall(t.Context())
		require.NoError(t, err)
		require.NoError(t, st.Send(&testgrpc.StreamingInputCallRequest{}))
		_, err = st.CloseAndRecv()
		require.NoError(t, err)
		assert.Equal(t, 0, br.State().Counts.ConsecutiveFailures)
	})
}

func TestStream_GR8_CallerCancellationFreesProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: circuitbreaker.Immediate})
		e := start(t, networks[0], &testServer{stream: func(s testgrpc.TestService_StreamingOutputCallServer, _ int) error {
			<-s.Context().Done()
			return s.Context().Err()
		}}, nil, streamClient(t, rampartgrpc.ClientConfig{Breaker: br}))
		trip(t, br)
		ctx, cancel := context.WithCancel(t.Context())
		_, err := e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		assert.Equal(t, 1, br.State().ProbesInFlight)
		cancel() // without reading the stream
		synctest.Wait()
		assert.Equal(t, circuitbreaker.HalfOpen, br.State().State, "ignored, not a failure")
		assert.Equal(t, 0, br.State().ProbesInFlight)
	})
}

func TestStream_GR9_AbandonedStreamHoldsProbeForTheLeaseOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br := newBreaker(t, circuitbreaker.Config{
			Policy:     circuitbreaker.Consecutive{Failures: 1},
			CoolDown:   circuitbreaker.Immediate,
			ProbeLease: 2 * time.Second,
		})
		e := start(t, networks[0], &testServer{stream: func(s testgrpc.TestService_StreamingOutputCallServer, _ int) error {
			<-s.Context().Done()
			return s.Context().Err()
		}}, nil, streamClient(t, rampartgrpc.ClientConfig{Breaker: br}))
		trip(t, br)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		_, err := e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{}) // abandoned: never read, not cancelled
		require.NoError(t, err)
		_, err = e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen, "the probe slot is held")
		time.Sleep(2*time.Second - time.Nanosecond)
		_, err = e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen, "until the lease ends")
		time.Sleep(time.Nanosecond)
		_, err = e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
		assert.NoError(t, err, "the lease has ended")
	})
}

func TestStream_GR10_AttemptTimeoutNeverEndsAnOpenStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, networks[0], &testServer{stream: func(s testgrpc.TestService_StreamingOutputCallServer, _ int) error {
			for range 5 {
				time.Sleep(100 * time.Millisecond)
				if err := s.Send(&testgrpc.StreamingOutputCallResponse{}); err != nil {
					return err
				}
			}
			return nil
		}}, nil, streamClient(t, rampartgrpc.ClientConfig{AttemptTimeout: 50 * time.Millisecond}))
		begin := time.Now()
		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		got, err := recvAll(st)
		assert.Equal(t, io.EOF, err)
		assert.Equal(t, 5, got)
		assert.Equal(t, 500*time.Millisecond, time.Since(begin))
	})
}

// stubStream is a stream that nobody reads.
type stubStream struct{ grpc.ClientStream }

func (stubStream) Context() context.Context { return context.Background() }

func TestStream_GR10_OpeningRetriedBeforeCommit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		methods func(string) bool
		want    int
	}{
		{name: "safe to repeat", methods: rampartgrpc.Methods(streamMethod), want: 3},
		{name: "not declared", methods: nil, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ic, err := rampartgrpc.NewStreamClientInterceptor(rampartgrpc.ClientConfig{Retry: rampartgrpc.RetryConfig{Methods: tc.methods, Backoff: noWait(t)}})
			require.NoError(t, err)
			opened := 0
			streamer := func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
				opened++
				if opened < 3 {
					return nil, status.Error(codes.Unavailable, "no connection")
				}
				return stubStream{}, nil
			}
			_, _ = ic(t.Context(), &grpc.StreamDesc{ServerStreams: true}, nil, streamMethod, streamer)
			assert.Equal(t, tc.want, opened)
		})
	}
}

func TestStream_GR10_NotRetriedAfterCommit(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		e := start(t, n, &testServer{stream: sendThen(1, status.Error(codes.Unavailable, "later"))}, nil, streamClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(streamMethod), Backoff: noWait(t)},
		}))
		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		_, err = st.Recv()
		require.NoError(t, err)
		_, err = st.Recv()
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, int32(1), e.srv.streams.Load())
	})
}

func TestStream_GR10_HeadersCommit(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		e := start(t, n, &testServer{stream: func(s testgrpc.TestService_StreamingOutputCallServer, _ int) error {
			if err := s.SendHeader(nil); err != nil {
				return err
			}
			return status.Error(codes.Unavailable, "after the headers")
		}}, nil, streamClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(streamMethod), Backoff: noWait(t)},
		}))
		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		_, err = st.Recv()
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, int32(1), e.srv.streams.Load())
	})
}

func TestStream_GR10_RetriedBeforeCommitWithItsRequest(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		srv := &testServer{
			stream: func(s testgrpc.TestService_StreamingOutputCallServer, n int) error {
				if n < 3 {
					return status.Error(codes.Unavailable, "refused before the headers")
				}
				return sendThen(2, nil)(s, n)
			},
			streamReqs: make(chan *testgrpc.StreamingOutputCallRequest, 3),
		}
		e := start(t, n, srv, nil, streamClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(streamMethod), Backoff: noWait(t)},
		}))
		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte("again")}})
		require.NoError(t, err)
		got, err := recvAll(st)
		assert.Equal(t, io.EOF, err)
		assert.Equal(t, 2, got)
		assert.Equal(t, int32(3), srv.streams.Load())
		for range srv.streams.Load() {
			assert.Equal(t, "again", string((<-srv.streamReqs).GetPayload().GetBody()), "every attempt sends the request")
		}
	})
}

func TestStream_GR10_RetriesBeforeCommitExhausted(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		e := start(t, n, &testServer{stream: sendThen(0, status.Error(codes.Unavailable, "always"))}, nil, streamClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(streamMethod), Backoff: noWait(t), MaxAttempts: 4},
		}))
		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		_, err = st.Recv()
		assert.Equal(t, codes.Unavailable, status.Code(err))
		_, err = st.Recv()
		assert.Equal(t, codes.Unavailable, status.Code(err), "the same error again")
		assert.Equal(t, int32(4), e.srv.streams.Load())
	})
}

func TestStream_GR10_UnsafeMethodNotRetriedBeforeCommit(t *testing.T) {
	e := start(t, networks[0], &testServer{stream: sendThen(0, status.Error(codes.Unavailable, "always"))}, nil, streamClient(t, rampartgrpc.ClientConfig{
		Retry: rampartgrpc.RetryConfig{Backoff: noWait(t)},
	}))
	st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	_, err = st.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, int32(1), e.srv.streams.Load())
}

func TestStream_GR10_HeaderBeforeRecvNotRetried(t *testing.T) {
	e := start(t, networks[0], &testServer{stream: sendThen(0, status.Error(codes.Unavailable, "always"))}, nil, streamClient(t, rampartgrpc.ClientConfig{
		Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(streamMethod), Backoff: noWait(t)},
	}))
	st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
	require.NoError(t, err)
	_, _ = st.Header()
	_, err = st.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, int32(1), e.srv.streams.Load())
}

func TestStream_GR2_PushbackBeforeCommit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   string
		streams int32
		took    time.Duration
	}{
		{name: "honoured", value: "200", streams: 2, took: 200 * time.Millisecond},
		{name: "negative stops", value: "-1", streams: 1, took: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := start(t, networks[0], &testServer{stream: func(s testgrpc.TestService_StreamingOutputCallServer, n int) error {
					if n == 1 {
						s.SetTrailer(metadata.Pairs(rampartgrpc.PushbackKey, tc.value))
						return status.Error(codes.Unavailable, "pushing back")
					}
					return nil
				}}, nil, streamClient(t, rampartgrpc.ClientConfig{
					Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(streamMethod), Backoff: noWait(t)},
				}))
				begin := time.Now()
				st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
				require.NoError(t, err)
				_, _ = st.Recv()
				assert.Equal(t, tc.took, time.Since(begin))
				assert.Equal(t, tc.streams, e.srv.streams.Load())
			})
		})
	}
}

func TestStream_GR10_OpeningTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ic, err := rampartgrpc.NewStreamClientInterceptor(rampartgrpc.ClientConfig{AttemptTimeout: 70 * time.Millisecond})
		require.NoError(t, err)
		streamer := func(ctx context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
			<-ctx.Done() // waiting for a connection
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		begin := time.Now()
		_, err = ic(t.Context(), &grpc.StreamDesc{ServerStreams: true}, nil, streamMethod, streamer)
		assert.Equal(t, 70*time.Millisecond, time.Since(begin))
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	})
}

func TestStream_GR11_ResetStreamIsFailure(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
		e := start(t, n, &testServer{stream: func(s testgrpc.TestService_StreamingOutputCallServer, _ int) error {
			if err := s.Send(&testgrpc.StreamingOutputCallResponse{}); err != nil {
				return err
			}
			<-s.Context().Done()
			return s.Context().Err()
		}}, nil, streamClient(t, rampartgrpc.ClientConfig{Breaker: br}))
		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		_, err = st.Recv()
		require.NoError(t, err)
		e.lis.reset() // the connection drops under the stream
		_, err = st.Recv()
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, circuitbreaker.Open, br.State().State)
	})
}

// recvAll receives until the stream ends, and returns how many messages
// it received and the error it ended with.
func recvAll(st grpc.ServerStreamingClient[testgrpc.StreamingOutputCallResponse]) (int, error) {
	for got := 0; ; got++ {
		if _, err := st.Recv(); err != nil {
			return got, err
		}
	}
}

func TestStream_GR9_NoGoroutineOutlivesTheStream(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		br := newBreaker(t, circuitbreaker.Config{})
		e := start(t, n, &testServer{stream: func(s testgrpc.TestService_StreamingOutputCallServer, n int) error {
			if n == 1 {
				return status.Error(codes.Unavailable, "refused before the headers")
			}
			return sendThen(1, nil)(s, n)
		}}, nil, streamClient(t, rampartgrpc.ClientConfig{
			Breaker:        br,
			AttemptTimeout: time.Minute,
			Retry:          rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(streamMethod), Backoff: noWait(t)},
		}))
		ctx, cancel := context.WithCancel(context.Background()) // live until the check is done
		defer cancel()
		st, err := e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		got, err := recvAll(st)
		assert.Equal(t, io.EOF, err)
		assert.Equal(t, 1, got)
		e.stop()
		goleak.VerifyNone(t)
	})
}

// A panic in ClientConfig.Classify, during a HalfOpen probe, continues to
// the caller and re-opens the breaker with the cause ErrPanicked: the
// probe's slot is free at once (the cool-down is Immediate), for a unary
// call as for a stream judged on its final status.
func TestClient_GR8_PanickingClassifyFreesTheProbe(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(t *testing.T, e *env)
	}{{
		name: "unary",
		call: func(t *testing.T, e *env) { _, _ = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{}) },
	}, {
		name: "stream",
		call: func(t *testing.T, e *env) {
			st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
			require.NoError(t, err)
			_, _ = st.Recv()
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: circuitbreaker.Immediate})
			cfg := rampartgrpc.ClientConfig{Breaker: br, Classify: func(error) rampart.Outcome { panic("judge exploded") }}
			e := start(t, networks[0], &testServer{}, nil, unaryClient(t, cfg), streamClient(t, cfg))
			trip(t, br)
			assert.PanicsWithValue(t, "judge exploded", func() { tc.call(t, e) })
			assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, Cause: circuitbreaker.ErrPanicked}, br.State())
			p, err := br.TryAcquire()
			require.NoError(t, err, "the probe's slot is free")
			p.Ignore()
		})
	}
}

// A stream holds its slot of ClientConfig.Limit from its opening to its
// end, however it ends. While it is open, the limiter it shares with the
// unary calls refuses another stream and a unary call unsent, with
// RESOURCE_EXHAUSTED and the default pushback, reported by the observer,
// not retried and not counted by the breaker; once it has ended, the slot
// is back.
func TestStream_GR18_LimitHoldsTheSlotUntilTheStreamEnds(t *testing.T) {
	block := func(s testgrpc.TestService_StreamingOutputCallServer, _ int) error {
		<-s.Context().Done()
		return s.Context().Err()
	}
	for _, tc := range []struct {
		name   string
		server func(testgrpc.TestService_StreamingOutputCallServer, int) error
		// end ends the stream st opened with the cancel of its context.
		end func(t *testing.T, st grpc.ServerStreamingClient[testgrpc.StreamingOutputCallResponse], cancel context.CancelFunc)
	}{
		{"end of stream", sendThen(1, nil), func(t *testing.T, st grpc.ServerStreamingClient[testgrpc.StreamingOutputCallResponse], _ context.CancelFunc) {
			got, err := recvAll(st)
			assert.Equal(t, io.EOF, err)
			assert.Equal(t, 1, got)
		}},
		{"error status", sendThen(1, status.Error(codes.Internal, "broken")), func(t *testing.T, st grpc.ServerStreamingClient[testgrpc.StreamingOutputCallResponse], _ context.CancelFunc) {
			_, err := recvAll(st)
			assert.Equal(t, codes.Internal, status.Code(err))
		}},
		{"caller cancels", block, func(t *testing.T, _ grpc.ServerStreamingClient[testgrpc.StreamingOutputCallResponse], cancel context.CancelFunc) {
			cancel() // without reading the stream
		}},
		{"caller's deadline", block, func(t *testing.T, _ grpc.ServerStreamingClient[testgrpc.StreamingOutputCallResponse], _ context.CancelFunc) {
			time.Sleep(time.Hour) // past the deadline, without reading the stream
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim, err := concurrency.New(1)
				require.NoError(t, err)
				br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
				var obs observetest.Recorder
				cfg := rampartgrpc.ClientConfig{
					Limit:    lim,
					Breaker:  br,
					Name:     "client",
					Observer: &obs,
					Retry: rampartgrpc.RetryConfig{
						Methods:   rampartgrpc.Methods(unaryMethod, streamMethod),
						Backoff:   noWait(t),
						Retryable: func(error) bool { return true },
					},
				}
				e := start(t, networks[0], &testServer{stream: tc.server}, nil, unaryClient(t, cfg), streamClient(t, cfg))
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				st, err := e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
				require.NoError(t, err)
				synctest.Wait()
				require.Equal(t, 1, lim.InFlight(), "the open stream holds its slot")

				_, err = e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
				assert.Equal(t, codes.ResourceExhausted, status.Code(err))
				assert.ErrorIs(t, err, concurrency.ErrLimited)
				wait, ok := rampart.RetryAfter(err)
				require.True(t, ok)
				assert.Equal(t, rampartgrpc.DefaultPushback, wait)
				_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
				assert.Equal(t, codes.ResourceExhausted, status.Code(err))
				assert.Equal(t, int32(1), e.srv.streams.Load(), "the refused stream was neither sent nor retried")
				assert.Equal(t, int32(0), e.srv.calls.Load(), "the refused unary call was neither sent nor retried")
				assert.Equal(t, circuitbreaker.Closed, br.State().State, "the refusals are not failures")
				var refused int
				for _, ev := range obs.Events() {
					if ev.Source == observe.Concurrency && ev.Kind == observe.Refused {
						assert.Equal(t, "client", ev.Name)
						refused++
					}
				}
				assert.Equal(t, 2, refused, "the stream's refusal and the unary call's")

				tc.end(t, st, cancel)
				synctest.Wait()
				assert.Equal(t, 0, lim.InFlight(), "the ended stream gave its slot back")
			})
		})
	}
}

// A client-streaming call ends with its one response: the slot is back
// once CloseAndRecv has it.
func TestStream_GR18_OneResponseGivesTheSlotBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.New(1)
		require.NoError(t, err)
		e := start(t, networks[0], &testServer{}, nil, streamClient(t, rampartgrpc.ClientConfig{Limit: lim}))
		for range 3 {
			st, err := e.tc.StreamingInputCall(t.Context())
			require.NoError(t, err)
			assert.Equal(t, 1, lim.InFlight())
			require.NoError(t, st.Send(&testgrpc.StreamingInputCallRequest{}))
			resp, err := st.CloseAndRecv()
			require.NoError(t, err)
			assert.Equal(t, int32(1), resp.GetAggregatedPayloadSize())
			assert.Equal(t, 0, lim.InFlight())
		}
	})
}

// A stream its caller abandons, neither reading it to its end nor ending
// its context, holds its slot as grpc-go holds the stream: until its
// context ends, even after the server has finished it.
func TestStream_GR18_AbandonedStreamHoldsItsSlotUntilItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := concurrency.New(1)
		require.NoError(t, err)
		e := start(t, networks[0], &testServer{stream: sendThen(1, nil)}, nil, streamClient(t, rampartgrpc.ClientConfig{Limit: lim}))
		ctx, cancel := context.WithCancel(t.Context())
		_, err = e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, int32(1), e.srv.streams.Load())
		time.Sleep(time.Hour)
		assert.Equal(t, 1, lim.InFlight(), "the server has finished, the caller has not")
		cancel()
		synctest.Wait()
		assert.Equal(t, 0, lim.InFlight())
	})
}

// A stream that never opens, or that SendMsg or Header ends, gives its
// slot of ClientConfig.Limit back at once: the breaker refusing it, the
// opening failing, SendMsg failing (io.EOF excepted: RecvMsg tells the
// end then), Header failing; and a slot given back twice (Header, then
// RecvMsg's final status) is given back once.
func TestStream_GR18_EndsBeforeRecvGiveTheSlotBack(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "gone")
	for _, tc := range []struct {
		name string
		open error         // the opening's error
		st   *endingStream // the stream opened, when open is nil
		// use uses the stream opened and reports whether it holds its
		// slot still.
		use     func(t *testing.T, cs grpc.ClientStream) bool
		tripped bool // the breaker is open
	}{
		{name: "breaker open", tripped: true},
		{name: "opening fails", open: unavailable},
		{name: "SendMsg fails", st: &endingStream{send: unavailable, recv: unavailable}, use: func(t *testing.T, cs grpc.ClientStream) bool {
			assert.Equal(t, unavailable, cs.SendMsg(&testgrpc.StreamingOutputCallRequest{}))
			return false
		}},
		{name: "SendMsg io.EOF", st: &endingStream{send: io.EOF, recv: unavailable}, use: func(t *testing.T, cs grpc.ClientStream) bool {
			assert.Equal(t, io.EOF, cs.SendMsg(&testgrpc.StreamingOutputCallRequest{}))
			return true
		}},
		{name: "Header fails, then RecvMsg", st: &endingStream{header: unavailable, recv: unavailable}, use: func(t *testing.T, cs grpc.ClientStream) bool {
			_, err := cs.Header()
			assert.Equal(t, unavailable, err)
			assert.Equal(t, unavailable, cs.RecvMsg(&testgrpc.StreamingOutputCallResponse{}))
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := concurrency.New(1)
			require.NoError(t, err)
			sw := &circuitbreaker.Switch{}
			br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 100}, Switch: sw})
			if tc.tripped {
				sw.ForceOpen(nil)
			}
			ic, err := rampartgrpc.NewStreamClientInterceptor(rampartgrpc.ClientConfig{Limit: lim, Breaker: br, Retry: rampartgrpc.RetryConfig{MaxAttempts: 1}})
			require.NoError(t, err)
			opened := 0
			streamer := func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
				opened++
				if tc.open != nil {
					return nil, tc.open
				}
				return tc.st, nil
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cs, err := ic(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, nil, streamMethod, streamer)
			if tc.use == nil {
				require.Error(t, err)
				assert.Equal(t, map[bool]int{true: 0, false: 1}[tc.tripped], opened)
				assert.Equal(t, 0, lim.InFlight(), "the slot is back")
				return
			}
			require.NoError(t, err)
			require.Equal(t, 1, lim.InFlight(), "the open stream holds its slot")
			if tc.use(t, cs) {
				assert.Equal(t, 1, lim.InFlight(), "the stream has not ended")
				assert.Equal(t, unavailable, cs.RecvMsg(&testgrpc.StreamingOutputCallResponse{}))
			}
			assert.Equal(t, 0, lim.InFlight(), "the slot is back")
			cancel() // the watch on ctx finds the stream ended: nothing more to give back
			other, err := ic(t.Context(), &grpc.StreamDesc{ServerStreams: true}, nil, streamMethod, streamer)
			require.NoError(t, err, "the one slot is free again")
			assert.Equal(t, 1, lim.InFlight())
			_ = other.RecvMsg(&testgrpc.StreamingOutputCallResponse{})
			assert.Equal(t, 0, lim.InFlight())
		})
	}
}

// endingStream is a stream whose SendMsg, Header and RecvMsg return the
// errors set.
type endingStream struct {
	grpc.ClientStream
	send, header, recv error
}

func (s *endingStream) Context() context.Context     { return context.Background() }
func (s *endingStream) SendMsg(any) error            { return s.send }
func (s *endingStream) Header() (metadata.MD, error) { return nil, s.header }
func (s *endingStream) RecvMsg(any) error            { return s.recv }

// A stream to a method Skip names (a health Watch) bypasses an open
// breaker, as a unary call does; every other stream is refused.
func TestStream_GR17_SkipBypassesOpenBreaker(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
		p, err := br.TryAcquire()
		require.NoError(t, err)
		p.Failure(errors.New("tripped"))
		e := start(t, n, &testServer{}, nil, streamClient(t, rampartgrpc.ClientConfig{
			Skip:    rampartgrpc.Methods("/grpc.health.v1.Health/Watch"),
			Breaker: br,
		}))
		w, err := e.hc.Watch(t.Context(), &healthgrpc.HealthCheckRequest{})
		require.NoError(t, err)
		resp, err := w.Recv()
		require.NoError(t, err, "the health watch reaches the server")
		assert.Equal(t, healthgrpc.HealthCheckResponse_SERVING, resp.GetStatus())

		_, err = e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.ErrorIs(t, err, circuitbreaker.ErrOpen)
		assert.Equal(t, circuitbreaker.Open, br.State().State)
	})
}

// A stream's end is seen by every later call the caller makes on it: more
// Recvs after the error, Header, CloseSend, then its context cancelled.
// (An instrumentation that ends its span on each of those paths counts
// the stream again.) The breaker's observer is told of one failure, the
// limiter's slot is given back once (the next stream gets it), and the
// breaker's counts say what the observer says.
func TestStream_EV12_EndSeenOnEveryPathCountedOnce(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		lim, err := concurrency.New(1)
		require.NoError(t, err)
		var seen observetest.Counter
		br := newBreaker(t, circuitbreaker.Config{Name: "backend", Policy: circuitbreaker.Consecutive{Failures: 5}, Observer: &seen})
		e := start(t, n, &testServer{stream: sendThen(1, status.Error(codes.Internal, "broken"))}, nil,
			streamClient(t, rampartgrpc.ClientConfig{Breaker: br, Limit: lim, Retry: rampartgrpc.RetryConfig{MaxAttempts: 1}}))
		ctx, cancel := context.WithCancel(t.Context())
		st, err := e.tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		_, err = st.Recv()
		require.NoError(t, err)
		for range 3 {
			_, err = st.Recv()
			assert.Equal(t, codes.Internal, status.Code(err))
		}
		_, _ = st.Header()
		_ = st.CloseSend()
		cancel()
		assert.Equal(t, map[string]int{"success": 0, "failure": 1, "ignored": 0, "rejected": 0}, seen.Outcomes())
		assert.Equal(t, 1, br.State().Counts.ConsecutiveFailures)
		assert.Zero(t, lim.InFlight())

		st, err = e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err, "the slot was given back")
		got, err := recvAll(st)
		assert.Equal(t, 1, got)
		assert.Equal(t, codes.Internal, status.Code(err))
		assert.Equal(t, map[string]int{"success": 0, "failure": 2, "ignored": 0, "rejected": 0}, seen.Outcomes())
		assert.Zero(t, lim.InFlight())
	})
}
