package rampartgrpc_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartgrpc"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/sim"
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

// healthMethod is grpc-go's health check, which every server of the tests
// serves.
const healthMethod = "/grpc.health.v1.Health/Check"

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	unaryMethod  = "/grpc.testing.TestService/UnaryCall"
	streamMethod = "/grpc.testing.TestService/StreamingOutputCall"
)

// testServer is a TestService whose unary and server-streaming methods do
// what the test says, and count their calls.
type testServer struct {
	testgrpc.UnimplementedTestServiceServer
	unary   func(ctx context.Context, n int) (*testgrpc.SimpleResponse, error)
	stream  func(stream testgrpc.TestService_StreamingOutputCallServer, n int) error
	calls   atomic.Int32
	streams atomic.Int32
	// streamReqs holds the request of every StreamingOutputCall.
	streamReqs chan *testgrpc.StreamingOutputCallRequest
}

func (s *testServer) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	n := int(s.calls.Add(1))
	if s.unary == nil {
		return &testgrpc.SimpleResponse{Username: "ok"}, nil
	}
	return s.unary(ctx, n)
}

func (s *testServer) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, stream testgrpc.TestService_StreamingOutputCallServer) error {
	n := int(s.streams.Add(1))
	if s.streamReqs != nil {
		s.streamReqs <- req
	}
	if s.stream == nil {
		return nil
	}
	return s.stream(stream, n)
}

func (s *testServer) StreamingInputCall(stream testgrpc.TestService_StreamingInputCallServer) error {
	s.streams.Add(1)
	for {
		if _, err := stream.Recv(); err != nil {
			return stream.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: 1})
		}
	}
}

// network is how a test reaches its server.
type network struct {
	name   string
	listen func(t testing.TB) (net.Listener, grpc.DialOption, string)
}

var networks = []network{
	{"bufconn", func(testing.TB) (net.Listener, grpc.DialOption, string) {
		lis := bufconn.Listen(1 << 20)
		return lis, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return lis.DialContext(ctx)
		}), "passthrough:///bufconn"
	}},
	{"tcp", func(t testing.TB) (net.Listener, grpc.DialOption, string) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return lis, nil, "passthrough:///" + lis.Addr().String()
	}},
}

// conns records the server side of every connection, so a test can reset
// them.
type conns struct {
	net.Listener
	mu sync.Mutex
	cs []net.Conn
}

func (l *conns) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.cs = append(l.cs, c)
		l.mu.Unlock()
	}
	return c, err
}

// reset closes every server-side connection.
func (l *conns) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.cs {
		_ = c.Close()
	}
}

// env is a real grpc-go server and a client connection to it.
type env struct {
	srv  *testServer
	cc   *grpc.ClientConn
	lis  *conns
	tc   testgrpc.TestServiceClient
	hc   healthgrpc.HealthClient // grpc-go's own health service
	stop func()
}

// start serves srv on n with serverOpts and dials it with dialOpts. The
// server and the connection are stopped when the test (or synctest
// bubble) ends.
func start(t testing.TB, n network, srv *testServer, serverOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) *env {
	t.Helper()
	lis, dial, target := n.listen(t)
	cl := &conns{Listener: lis}
	s := grpc.NewServer(serverOpts...)
	testgrpc.RegisterTestServiceServer(s, srv)
	healthgrpc.RegisterHealthServer(s, health.NewServer())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(cl)
	}()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if dial != nil {
		opts = append(opts, dial)
	}
	cc, err := grpc.NewClient(target, append(opts, dialOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{srv: srv, cc: cc, lis: cl, tc: testgrpc.NewTestServiceClient(cc), hc: healthgrpc.NewHealthClient(cc)}
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			_ = cc.Close()
			s.Stop()
			<-done
		})
	}
	t.Cleanup(e.stop)
	return e
}

// eachNetwork runs f once over bufconn and once over loopback TCP.
func eachNetwork(t *testing.T, f func(t *testing.T, n network)) {
	for _, n := range networks {
		t.Run(n.name, func(t *testing.T) { f(t, n) })
	}
}

// countingBudget is a retry budget that counts deposits and grants every
// withdrawal.
type countingBudget struct{ deposits atomic.Int32 }

func (b *countingBudget) Deposit()       { b.deposits.Add(1) }
func (b *countingBudget) Withdraw() bool { return true }

// serverOpts installs both server interceptors with layers.
func serverOpts(t *testing.T, layers ...rampartgrpc.ServerLayer) []grpc.ServerOption {
	t.Helper()
	u, err := rampartgrpc.NewUnaryServerInterceptor(rampartgrpc.ServerConfig{Layers: layers})
	require.NoError(t, err)
	s, err := rampartgrpc.NewStreamServerInterceptor(rampartgrpc.ServerConfig{Layers: layers})
	require.NoError(t, err)
	return []grpc.ServerOption{grpc.UnaryInterceptor(u), grpc.StreamInterceptor(s)}
}

// rawCodec sends and receives bytes as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}
func (rawCodec) Name() string { return "proto" }

func streamClient(t *testing.T, cfg rampartgrpc.ClientConfig) grpc.DialOption {
	t.Helper()
	ic, err := rampartgrpc.NewStreamClientInterceptor(cfg)
	require.NoError(t, err)
	return grpc.WithStreamInterceptor(ic)
}

func newBreaker(t *testing.T, cfg circuitbreaker.Config) *circuitbreaker.Breaker {
	t.Helper()
	br, err := circuitbreaker.New(cfg)
	require.NoError(t, err)
	return br
}

// sendThen sends msgs messages and ends the stream with err.
func sendThen(msgs int, err error) func(testgrpc.TestService_StreamingOutputCallServer, int) error {
	return func(s testgrpc.TestService_StreamingOutputCallServer, _ int) error {
		for range msgs {
			if e := s.Send(&testgrpc.StreamingOutputCallResponse{}); e != nil {
				return e
			}
		}
		return err
	}
}

// readTrace returns the entries of the trace a Recorder wrote, in order
// of start, as package sim reads them.
func readTrace(t *testing.T, trace string) []record.Entry {
	t.Helper()
	tr := sim.NewTraceReader(strings.NewReader(trace), "trace")
	var es []record.Entry
	for {
		e, err := tr.Next()
		if err == io.EOF {
			return es
		}
		require.NoError(t, err)
		es = append(es, e)
	}
}
