package rampartgrpc_test

import (
	"context"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/rampartgrpc"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

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

func limitLayer(t *testing.T, max int) rampartgrpc.ServerLayer {
	t.Helper()
	l, err := concurrency.New(max)
	require.NoError(t, err)
	layer, err := concurrency.NewLayer[rampartgrpc.ServerCall, any](concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
	require.NoError(t, err)
	return layer
}

// blocking returns a server whose calls wait for release, and a channel
// that receives once per call that entered.
func blocking() (*testServer, chan struct{}, chan struct{}) {
	entered, release := make(chan struct{}, 10), make(chan struct{})
	return &testServer{
		unary: func(context.Context, int) (*testgrpc.SimpleResponse, error) {
			entered <- struct{}{}
			<-release
			return &testgrpc.SimpleResponse{}, nil
		},
		stream: func(testgrpc.TestService_StreamingOutputCallServer, int) error {
			entered <- struct{}{}
			<-release
			return nil
		},
	}, entered, release
}

func TestServer_GR12_ConcurrencyLimitIsUnavailableWithPushback(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		srv, entered, release := blocking()
		e := start(t, n, srv, serverOpts(t, limitLayer(t, 1)))
		done := make(chan error)
		go func() {
			_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
			done <- err
		}()
		<-entered

		var trailer metadata.MD
		_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, []string{"100"}, trailer[rampartgrpc.PushbackKey])

		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		_, err = st.Recv()
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, []string{"100"}, st.Trailer()[rampartgrpc.PushbackKey])

		close(release)
		require.NoError(t, <-done)
		assert.Equal(t, int32(1), srv.calls.Load())
		assert.Equal(t, int32(0), srv.streams.Load())
	})
}

func TestServer_GR12_StreamHoldsItsSlotUntilItEnds(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		srv, entered, release := blocking()
		e := start(t, n, srv, serverOpts(t, limitLayer(t, 1)))
		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		<-entered
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))
		close(release)
		_, err = st.Recv()
		require.ErrorIs(t, err, io.EOF)
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.NoError(t, err)
	})
}

func TestServer_GR12_RateLimitIsResourceExhaustedWithItsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rl, err := ratelimit.NewLayer[rampartgrpc.ServerCall, any](ratelimit.Config{Limiter: rate.NewLimiter(rate.Every(time.Second), 1), Mode: ratelimit.Refuse})
		require.NoError(t, err)
		e := start(t, networks[0], &testServer{}, serverOpts(t, rl))
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		time.Sleep(250 * time.Millisecond)
		var trailer metadata.MD
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		assert.Equal(t, []string{"750"}, trailer[rampartgrpc.PushbackKey])
		assert.Equal(t, int32(1), e.srv.calls.Load())
	})
}

func TestServer_GR12_NeverTokenPushesBackMinusOne(t *testing.T) {
	rl, err := ratelimit.NewLayer[rampartgrpc.ServerCall, any](ratelimit.Config{Limiter: rate.NewLimiter(0, 0), Mode: ratelimit.Refuse})
	require.NoError(t, err)
	e := start(t, networks[0], &testServer{}, serverOpts(t, rl))
	var trailer metadata.MD
	_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, []string{"-1"}, trailer[rampartgrpc.PushbackKey])
}

func TestServer_GR12_RateLimitPerMetadataKey(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: rate.Every(time.Hour), Burst: 1})
		require.NoError(t, err)
		rl, err := ratelimit.NewKeyedLayer[rampartgrpc.ServerCall, any](k, rampartgrpc.KeyMetadata("Tenant"), ratelimit.Refuse)
		require.NoError(t, err)
		e := start(t, n, &testServer{}, serverOpts(t, rl))
		a := metadata.AppendToOutgoingContext(t.Context(), "tenant", "a")
		b := metadata.AppendToOutgoingContext(t.Context(), "tenant", "b")
		_, err = e.tc.UnaryCall(a, &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		_, err = e.tc.UnaryCall(a, &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		_, err = e.tc.UnaryCall(b, &testgrpc.SimpleRequest{})
		assert.NoError(t, err, "another tenant has its own bucket")
	})
}

func TestServer_GR12_ShedIsUnavailableWithPushback(t *testing.T) {
	ready := false
	shed, err := loadshed.NewLayer[rampartgrpc.ServerCall, any](loadshed.Config{Readiness: loadshed.ReadyFunc(func() bool { return ready })})
	require.NoError(t, err)
	p, err := rampartgrpc.NewUnaryServerInterceptor(rampartgrpc.ServerConfig{Layers: []rampartgrpc.ServerLayer{nil, shed}, Pushback: 1500 * time.Microsecond})
	require.NoError(t, err)
	e := start(t, networks[0], &testServer{}, []grpc.ServerOption{grpc.UnaryInterceptor(p)})
	var trailer metadata.MD
	_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, []string{"2"}, trailer[rampartgrpc.PushbackKey], "rounded up to whole milliseconds")
	assert.Equal(t, int32(0), e.srv.calls.Load())
}

func TestServer_GR12_TimeoutIsDeadlineExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		to, err := timeout.NewLayer(timeout.Config[rampartgrpc.ServerCall, any]{Timeout: 200 * time.Millisecond})
		require.NoError(t, err)
		hang := func(s testgrpc.TestService_StreamingOutputCallServer, _ int) error {
			<-s.Context().Done()
			return s.Context().Err()
		}
		e := start(t, networks[0], &testServer{unary: func(ctx context.Context, _ int) (*testgrpc.SimpleResponse, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, stream: hang}, serverOpts(t, to))
		begin := time.Now()
		var trailer metadata.MD
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Equal(t, 200*time.Millisecond, time.Since(begin))
		assert.Empty(t, trailer[rampartgrpc.PushbackKey])

		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		_, err = st.Recv()
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Equal(t, 400*time.Millisecond, time.Since(begin))
	})
}

func TestServer_GR12_HandlerStatusUnchanged(t *testing.T) {
	e := start(t, networks[0], &testServer{unary: failWith(codes.NotFound, 1)}, serverOpts(t, limitLayer(t, 1)))
	var trailer metadata.MD
	_, err := e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	assert.Equal(t, codes.NotFound, status.Code(err))
	assert.Equal(t, "injected", status.Convert(err).Message())
	assert.Empty(t, trailer[rampartgrpc.PushbackKey])
}

func TestServer_GR13_ClientHonoursServerPushback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testServer{}
		srv.unary = func(context.Context, int) (*testgrpc.SimpleResponse, error) {
			time.Sleep(50 * time.Millisecond)
			return &testgrpc.SimpleResponse{}, nil
		}
		b, err := retry.NewConstant(10 * time.Millisecond)
		require.NoError(t, err)
		e := start(t, networks[0], srv, serverOpts(t, limitLayer(t, 1)), unaryClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: b},
		}))
		go func() { _, _ = e.tc.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}) }()
		synctest.Wait() // the first call holds the only slot for 50ms
		begin := time.Now()
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		assert.Equal(t, 100*time.Millisecond+50*time.Millisecond, time.Since(begin), "retried after the pushback, then served")
		assert.Equal(t, int32(2), srv.calls.Load())
	})
}

func TestServerConfig_BadFieldsNamed(t *testing.T) {
	const pushback = "rampartgrpc: ServerConfig.Pushback must be >= 0 (0 means DefaultPushback, 100ms), got -1ns"
	_, err := rampartgrpc.NewUnaryServerInterceptor(rampartgrpc.ServerConfig{Pushback: -1})
	assert.EqualError(t, err, pushback)
	_, err = rampartgrpc.NewStreamServerInterceptor(rampartgrpc.ServerConfig{Pushback: -1})
	assert.EqualError(t, err, pushback)
	_, err = rampartgrpc.NewTapHandle(rampartgrpc.TapConfig{Key: rampartgrpc.KeyPeer})
	assert.EqualError(t, err, "rampartgrpc: TapConfig.Key is set without TapConfig.Keyed")
}

func TestKeyPeer(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5555}, want: "127.0.0.1"},
		{addr: &net.TCPAddr{IP: net.IPv6loopback, Port: 80}, want: "::1"},
		{addr: &net.UnixAddr{Name: "/tmp/sock", Net: "unix"}, want: "/tmp/sock"},
		{addr: nil, want: ""},
	} {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: tc.addr})
		assert.Equal(t, tc.want, rampartgrpc.KeyPeer(serverCallWith(t, ctx)))
	}
	assert.Equal(t, "", rampartgrpc.KeyPeer(rampartgrpc.ServerCall{}))
}

// serverCallWith returns the ServerCall a server interceptor builds for a
// call with ctx, by running one.
func serverCallWith(t *testing.T, ctx context.Context) rampartgrpc.ServerCall {
	var got rampartgrpc.ServerCall
	probe := rampartLayerFunc(func(c rampartgrpc.ServerCall) { got = c })
	u, err := rampartgrpc.NewUnaryServerInterceptor(rampartgrpc.ServerConfig{Layers: []rampartgrpc.ServerLayer{probe}})
	require.NoError(t, err)
	_, err = u(ctx, nil, &grpc.UnaryServerInfo{FullMethod: unaryMethod}, func(context.Context, any) (any, error) { return nil, nil })
	require.NoError(t, err)
	return got
}

// rampartLayerFunc is a server layer that shows each call to see.
func rampartLayerFunc(see func(rampartgrpc.ServerCall)) rampartgrpc.ServerLayer {
	return rampart.LayerFunc[rampartgrpc.ServerCall, any](func(inner rampartgrpc.ServerService) rampartgrpc.ServerService {
		return rampart.ServiceFunc[rampartgrpc.ServerCall, any](func(ctx context.Context, c rampartgrpc.ServerCall) (any, error) {
			see(c)
			return inner.Call(ctx, c)
		})
	})
}

func TestServer_GR13_StreamClientHonoursServerPushback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testServer{
			unary: func(context.Context, int) (*testgrpc.SimpleResponse, error) {
				time.Sleep(50 * time.Millisecond)
				return &testgrpc.SimpleResponse{}, nil
			},
			stream: sendThen(1, nil),
		}
		b, err := retry.NewConstant(10 * time.Millisecond)
		require.NoError(t, err)
		e := start(t, networks[0], srv, serverOpts(t, limitLayer(t, 1)), streamClient(t, rampartgrpc.ClientConfig{
			Retry: rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(streamMethod), Backoff: b},
		}))
		go func() { _, _ = e.tc.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}) }()
		synctest.Wait() // the unary call holds the only slot for 50ms
		begin := time.Now()
		st, err := e.tc.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		require.NoError(t, err)
		_, err = st.Recv()
		require.NoError(t, err, "refused, then retried after the pushback")
		assert.Equal(t, 100*time.Millisecond, time.Since(begin))
		_, err = st.Recv()
		assert.Equal(t, io.EOF, err)
		assert.Equal(t, int32(1), srv.streams.Load(), "the refused attempt never reached the handler")
	})
}
