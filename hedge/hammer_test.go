package hedge_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/wrap"
)

// Many goroutines call one hedged service with random latencies, failures
// and refused answers. Every call gets exactly one answer, every hedge was
// paid for by the budget, and every response that came with a nil error,
// accepted or not, is either returned or discarded.
func TestHedge_Hammer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, perWorker = 32, 100
		var attempts, responses, discarded atomic.Int64
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			attempts.Add(1)
			select {
			case <-time.After(rand.N(30 * time.Millisecond)):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			switch rand.N(10) {
			case 0:
				return "", errors.New("failed " + req)
			case 1:
				responses.Add(1)
				return "rejected " + req, nil
			}
			responses.Add(1)
			return "ok " + req, nil
		})
		shared, err := budget.New(budget.Config{MinPerSecond: budget.NoFloor, Ratio: 0.1})
		require.NoError(t, err)
		bud := budgettest.Over(shared)
		svc, err := wrap.Service(rampart.Service[string, string](inner), hedge.NewLayer, hedge.Config[string, string]{
			Hedgeable:   func(req string) bool { return !strings.HasSuffix(req, "w") },
			Budget:      bud,
			MaxAttempts: 3,
			Delay:       5 * time.Millisecond,
			Quantile:    0.8,
			Window:      64,
			MinSamples:  16,
			Accept: func(resp string, err error) bool {
				return err == nil && strings.HasPrefix(resp, "ok ")
			},
			Discard: func(resp string) {
				if resp != "" {
					discarded.Add(1)
				}
			},
		})
		require.NoError(t, err)

		var answered, returned, hedgeable, wrong atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					req := fmt.Sprintf("%d-%d", w, i)
					if i%7 == 0 {
						req += "w" // not hedgeable
					} else {
						hedgeable.Add(1)
					}
					resp, err := svc.Call(context.Background(), req)
					answered.Add(1)
					switch {
					case err == nil && (resp == "ok "+req || resp == "rejected "+req):
						returned.Add(1)
					case err != nil && resp == "" && strings.Contains(err.Error(), "failed "+req):
					default:
						wrong.Add(1) // an answer that is not this call's
					}
				}
			})
		}
		wg.Wait()

		deposits, granted := bud.Counts().Deposits, bud.Counts().Granted
		calls := int64(workers * perWorker)
		assert.Equal(t, calls, answered.Load(), "every call answered once")
		assert.Zero(t, wrong.Load())
		assert.Equal(t, hedgeable.Load(), deposits, "one deposit per hedgeable call")
		assert.Equal(t, calls+granted, attempts.Load(), "one attempt per call plus one per granted withdrawal")
		assert.LessOrEqual(t, granted, deposits/10, "within the budget's Ratio")
		assert.Positive(t, granted, "the test should hedge")
		assert.Equal(t, responses.Load(), returned.Load()+discarded.Load(), "every response returned or discarded")
	})
}

func TestHedge_DefaultDelayAndMinSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var steps []step
		for range hedge.DefaultMinSamples - 1 {
			steps = append(steps, step{latency: ms})
		}
		steps = append(steps, step{latency: time.Second}, step{latency: ms}, step{latency: time.Second}, step{latency: ms})
		b := newBackend(steps...)
		svc := newHedged(t, b, hedge.Config[string, string]{Hedgeable: always, Budget: budgettest.New(10), Quantile: 0.5})

		for range hedge.DefaultMinSamples - 1 {
			_, _, err := call(svc, context.Background())
			require.NoError(t, err)
		}
		_, took, err := call(svc, context.Background())
		require.NoError(t, err)
		assert.Equal(t, hedge.DefaultDelay+ms, took, "31 samples: hedged at the default fallback delay")
		_, took, err = call(svc, context.Background())
		require.NoError(t, err)
		assert.Equal(t, 2*ms, took, "32 samples of 1ms: hedged at 1ms")
	})
}

// Outside a bubble, with real time: after calls that hedged, nothing is
// left running.
func TestHedge_NoGoroutineLeft(t *testing.T) {
	defer goleak.VerifyNone(t)
	var calls atomic.Int32
	inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		if calls.Add(1)%2 == 1 {
			<-ctx.Done() // the original waits to be cancelled
			return "", ctx.Err()
		}
		return "hedge", nil
	})
	svc, err := wrap.Service(rampart.Service[string, string](inner), hedge.NewLayer, hedge.Config[string, string]{
		Hedgeable: always, Budget: budgettest.New(budgettest.Unlimited), Delay: time.Millisecond,
	})
	require.NoError(t, err)
	for range 20 {
		resp, err := svc.Call(context.Background(), "req")
		require.NoError(t, err)
		require.Equal(t, "hedge", resp)
	}
}
