package bench_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fsbudget "github.com/failsafe-go/failsafe-go/budget"
	fscircuitbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafegrpc"
	fstimeout "github.com/failsafe-go/failsafe-go/timeout"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/test/bufconn"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartgrpc"
)

// BenchmarkGRPCUnary measures one successful unary call over an in-memory
// connection (bufconn) to a real grpc-go server, bare and through each
// library's client interceptor with the same stack: a circuit breaker
// (five consecutive failures trip it), retries of UNAVAILABLE within a retry
// budget (at most 3 attempts), and a timeout per attempt (limit, an hour:
// it never fires, also not under callgrind, where a first call that dials
// takes more than a second).
// failsafe-go has no per-method "safe to repeat" switch: its retry policy
// applies to every method.
func BenchmarkGRPCUnary(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchGRPC(b) })
	// The bare call with a deadline the caller sets (the same hour, one
	// context.WithTimeout per call): what a deadline costs whoever sets it,
	// in the context package and in grpc-go (the grpc-timeout header, the
	// server's timer). rampart's attempt timeout sets one; failsafe-go's
	// timeout cancels a context without a deadline, so grpc-go sends none.
	b.Run("bare-deadline", func(b *testing.B) { benchGRPCDeadline(b, limit) })
	b.Run("rampart", func(b *testing.B) { benchGRPC(b, grpc.WithUnaryInterceptor(rampartInterceptor(b))) })
	b.Run("failsafe", func(b *testing.B) { benchGRPC(b, grpc.WithUnaryInterceptor(failsafeInterceptor())) })
	// failsafegrpc with the caller setting the attempt's deadline as
	// well (the same hour, one context.WithTimeout per call, as in
	// bare-deadline): the one way to give its server the deadline that
	// rampart's attempt timeout sends, so that both servers do the same
	// work.
	b.Run("failsafe-deadline", func(b *testing.B) {
		benchGRPCDeadline(b, limit, grpc.WithUnaryInterceptor(failsafeInterceptor()))
	})
}

// rampartInterceptor is rampartgrpc's unary client interceptor with the
// stack of BenchmarkGRPCUnary.
func rampartInterceptor(b *testing.B) grpc.UnaryClientInterceptor {
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	if err != nil {
		b.Fatal(err)
	}
	rb, err := budget.New(budget.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ic, err := rampartgrpc.NewUnaryClientInterceptor(rampartgrpc.ClientConfig{
		Breaker:        br,
		Retry:          rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(grpcMethod), Budget: rb, MaxAttempts: attempts},
		AttemptTimeout: limit,
	})
	if err != nil {
		b.Fatal(err)
	}
	return ic
}

// failsafeInterceptor is failsafegrpc's unary client interceptor with the
// stack of BenchmarkGRPCUnary.
func failsafeInterceptor() grpc.UnaryClientInterceptor {
	rp := failsafegrpc.NewRetryPolicyBuilder[any]().
		WithMaxAttempts(attempts).
		WithBackoff(100*time.Millisecond, 10*time.Second).
		WithBudget(fsbudget.New()).
		Build()
	cb := fscircuitbreaker.NewBuilder[any]().WithFailureThreshold(5).WithDelay(time.Minute).Build()
	return failsafegrpc.NewUnaryClientInterceptorWithExecutor(failsafe.With[any](rp, cb, fstimeout.New[any](limit)))
}

// grpcMethod is the method the gRPC benchmarks call.
const grpcMethod = "/grpc.testing.TestService/UnaryCall"

// BenchmarkGRPCInterceptor measures the client interceptors alone, the
// stacks of BenchmarkGRPCUnary: each iteration calls the interceptor with
// an invoker that returns at once, without grpc-go, a connection or a
// server, so that a row is the interceptor's own work on the caller's
// goroutine (its contexts, its timer, its breaker and budget, the call
// options it adds), and what a deadline costs grpc-go and the server is
// left out. bare calls the invoker directly. The loop is interceptLoop, a
// named function, so that instructions.sh can count it alone.
//
// bare-deadline calls the invoker with a deadline of its own
// (context.WithTimeoutCause, the attempt timeout's hour, and its cancel):
// the floor of an interceptor that gives each attempt a deadline, as
// rampart's does, so that rampart less bare-deadline is what rampart's
// interceptor does beyond the deadline.
func BenchmarkGRPCInterceptor(b *testing.B) {
	b.Run("bare", func(b *testing.B) { interceptLoop(b, nil) })
	b.Run("bare-deadline", func(b *testing.B) {
		cause := errors.New("attempt timeout")
		interceptLoop(b, func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			ctx, cancel := context.WithTimeoutCause(ctx, limit, cause)
			defer cancel()
			return invoker(ctx, method, req, reply, cc, opts...)
		})
	})
	b.Run("rampart", func(b *testing.B) { interceptLoop(b, rampartInterceptor(b)) })
	b.Run("failsafe", func(b *testing.B) { interceptLoop(b, failsafeInterceptor()) })
}

// interceptLoop makes one call per iteration through ic (directly to the
// invoker when ic is nil), and checks that each reached the invoker once.
func interceptLoop(b *testing.B, ic grpc.UnaryClientInterceptor) {
	var calls int
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		calls++
		return nil
	}
	req, reply := &testgrpc.SimpleRequest{}, &testgrpc.SimpleResponse{}
	ctx := context.Background()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		var err error
		if ic == nil {
			err = invoker(ctx, grpcMethod, req, reply, nil)
		} else {
			err = ic(ctx, grpcMethod, req, reply, nil, invoker)
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	if calls != n {
		b.Fatalf("%d calls reached the invoker, want %d", calls, n)
	}
}

type grpcServer struct {
	testgrpc.UnimplementedTestServiceServer
}

func (grpcServer) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{}, nil
}

func benchGRPC(b *testing.B, opts ...grpc.DialOption) { benchGRPCDeadline(b, 0, opts...) }

// benchGRPCDeadline is benchGRPC with each call given a deadline d from
// now, unless d is 0.
func benchGRPCDeadline(b *testing.B, d time.Duration, opts ...grpc.DialOption) {
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(s, grpcServer{})
	go func() { _ = s.Serve(lis) }()
	defer s.Stop()
	cc, err := grpc.NewClient("passthrough:///bufconn", append(opts,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
	)...)
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	client := testgrpc.NewTestServiceClient(cc)
	req := &testgrpc.SimpleRequest{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		cctx, cancel := ctx, context.CancelFunc(nil)
		if d > 0 {
			cctx, cancel = context.WithTimeout(ctx, d)
		}
		_, err := client.UnaryCall(cctx, req)
		if cancel != nil {
			cancel()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
