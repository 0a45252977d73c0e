package rampartgrpc_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/rampartgrpc"
	"github.com/rampart-go/rampart/ratelimit"
)

func TestTap_GR14_RefusesBeforeDecoding(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: rate.Every(time.Hour), Burst: 1})
		require.NoError(t, err)
		th, err := rampartgrpc.NewTapHandle(rampartgrpc.TapConfig{Keyed: k, Key: rampartgrpc.KeyMetadata("tenant")})
		require.NoError(t, err)
		e := start(t, n, &testServer{}, []grpc.ServerOption{grpc.InTapHandle(th)})
		ctx := metadata.AppendToOutgoingContext(t.Context(), "tenant", "a")
		// A request that cannot be decoded: the first passes the tap and
		// fails to decode, the second is refused before decoding.
		var out []byte
		err = e.cc.Invoke(ctx, unaryMethod, []byte{0xff, 0xff, 0xff}, &out, grpc.ForceCodecV2(rawCodec{}))
		assert.Equal(t, codes.Internal, status.Code(err), "decoded")
		err = e.cc.Invoke(ctx, unaryMethod, []byte{0xff, 0xff, 0xff}, &out, grpc.ForceCodecV2(rawCodec{}))
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "refused before decoding")
		_, err = e.tc.UnaryCall(metadata.AppendToOutgoingContext(t.Context(), "tenant", "b"), &testgrpc.SimpleRequest{})
		assert.NoError(t, err)
		assert.Equal(t, int32(1), e.srv.calls.Load())
	})
}

func TestTap_GR14_ShedAndPeer(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		var shedding atomic.Bool
		k, err := ratelimit.NewKeyed(ratelimit.KeyedConfig{Limit: rate.Every(time.Hour), Burst: 1})
		require.NoError(t, err)
		th, err := rampartgrpc.NewTapHandle(rampartgrpc.TapConfig{
			Shed:  loadshed.ReadyFunc(func() bool { return !shedding.Load() }),
			Keyed: k, // by peer
		})
		require.NoError(t, err)
		e := start(t, n, &testServer{}, []grpc.ServerOption{grpc.InTapHandle(th)})
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "one peer, one bucket")
		shedding.Store(true)
		_, err = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, 1, k.Len())
	})
}
