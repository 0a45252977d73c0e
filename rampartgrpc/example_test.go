package rampartgrpc_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/rampartgrpc"
	"github.com/rampart-go/rampart/retry"
)

// flaky answers UNAVAILABLE to every other call.
type flaky struct {
	testgrpc.UnimplementedTestServiceServer
	calls int
}

func (f *flaky) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	f.calls++
	if f.calls%2 == 1 {
		return nil, status.Error(codes.Unavailable, "try again")
	}
	return &testgrpc.SimpleResponse{Username: "gopher"}, nil
}

// serve serves srv with opts in memory and returns a dialer for it and a
// function that stops it.
func serve(srv testgrpc.TestServiceServer, opts ...grpc.ServerOption) (grpc.DialOption, func()) {
	lis := bufconn.Listen(1 << 16)
	s := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(s, srv)
	go func() { _ = s.Serve(lis) }()
	return grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }), s.Stop
}

func Example_client() {
	dialer, stop := serve(&flaky{})
	defer stop()

	br, _ := circuitbreaker.New(circuitbreaker.Config{})
	rb, _ := budget.New(budget.Config{})
	backoff, _ := retry.NewConstant(10 * time.Millisecond)
	ic, err := rampartgrpc.NewUnaryClientInterceptor(rampartgrpc.ClientConfig{
		Breaker: br,
		Retry: rampartgrpc.RetryConfig{
			Methods: rampartgrpc.Methods("/grpc.testing.TestService/UnaryCall"),
			Budget:  rb,
			Backoff: backoff,
		},
		AttemptTimeout: time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cc, err := grpc.NewClient("passthrough:///example", dialer,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(ic),
		grpc.WithDisableRetry(), // rampart retries; grpc-go must not multiply them
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()

	resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	fmt.Println(resp.GetUsername(), err)
	// Output: gopher <nil>
}

// busy holds every call until release is closed.
type busy struct {
	testgrpc.UnimplementedTestServiceServer
	entered chan struct{}
	release chan struct{}
}

func (b *busy) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	b.entered <- struct{}{}
	<-b.release
	return &testgrpc.SimpleResponse{}, nil
}

func Example_server() {
	l, _ := concurrency.New(1) // one call at a time
	lim, _ := concurrency.NewLayer[rampartgrpc.ServerCall, any](concurrency.Config{Limiter: l, Mode: concurrency.Refuse})
	si, err := rampartgrpc.NewUnaryServerInterceptor(rampartgrpc.ServerConfig{
		Layers:   []rampartgrpc.ServerLayer{lim},
		Pushback: 250 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &busy{entered: make(chan struct{}, 1), release: make(chan struct{})}
	dialer, stop := serve(srv, grpc.UnaryInterceptor(si))
	defer stop()
	cc, _ := grpc.NewClient("passthrough:///example", dialer, grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer cc.Close()
	client := testgrpc.NewTestServiceClient(cc)

	done := make(chan error)
	go func() {
		_, err := client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		done <- err
	}()
	<-srv.entered // the first call holds the only slot

	var trailer metadata.MD
	_, err = client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	fmt.Println(status.Code(err), trailer.Get(rampartgrpc.PushbackKey))
	close(srv.release)
	fmt.Println(<-done)
	// Output:
	// Unavailable [250]
	// <nil>
}
