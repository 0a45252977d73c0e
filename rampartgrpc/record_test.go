package rampartgrpc_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartgrpc"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/sim"
)

// Over real grpc-go connections, the client's recorder judges each
// attempt as its breaker does: UNAVAILABLE a failure, RESOURCE_EXHAUSTED
// ignored, a retry marked with its attempt, a refusal recorded as refused.
func TestRecorder_GR_JudgesAsTheBreaker(t *testing.T) {
	eachNetwork(t, func(t *testing.T, n network) {
		var out bytes.Buffer
		rec, err := record.New(&out, record.Config{})
		require.NoError(t, err)
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Hour})
		require.NoError(t, err)
		srv := &testServer{unary: func(_ context.Context, n int) (*testgrpc.SimpleResponse, error) {
			switch n {
			case 1:
				return &testgrpc.SimpleResponse{}, nil
			case 2:
				return nil, status.Error(codes.ResourceExhausted, "slow down")
			}
			return nil, status.Error(codes.Unavailable, "down")
		}}
		e := start(t, n, srv, nil, unaryClient(t, rampartgrpc.ClientConfig{
			Breaker:  br,
			Recorder: rec,
			Retry:    rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods(unaryMethod), Backoff: noWait(t), Budget: budget.Always},
		}))
		for range 4 {
			_, _ = e.tc.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		}
		require.NoError(t, rec.Close())
		type line struct {
			outcome record.Outcome
			class   string
			attempt int
		}
		var got []line
		tr := sim.NewTraceReader(strings.NewReader(out.String()), "trace")
		for {
			e, err := tr.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			assert.Equal(t, unaryMethod, e.Key)
			got = append(got, line{e.Outcome, e.Class, e.Attempt})
		}
		assert.Equal(t, []line{
			{record.Success, "", 1},
			{record.Ignored, "error", 1},
			{record.Failure, "error", 1},
			{record.Failure, "error", 2},
			{record.Refused, "open", 3},
			{record.Refused, "open", 1},
		}, got)
		assert.Equal(t, int32(4), srv.calls.Load(), "refused attempts were not sent")
	})
}
