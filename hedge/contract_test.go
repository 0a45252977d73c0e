package hedge_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/wrap"
)

func TestHedge_RT11_AllFailedErrorIsATimeoutWhenAnAttemptTimedOut(t *testing.T) {
	tests := []struct {
		name string
		errs []error
		want bool
	}{
		{name: "every attempt timed out", errs: []error{context.DeadlineExceeded, fmt.Errorf("read: %w", os.ErrDeadlineExceeded)}, want: true},
		{name: "one attempt timed out", errs: []error{errors.New("reset"), os.ErrDeadlineExceeded}, want: true},
		{name: "no timeout", errs: []error{errors.New("reset"), context.Canceled}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := &hedge.AllFailedError{Errs: tt.errs}
			assert.Equal(t, tt.want, os.IsTimeout(err), "os.IsTimeout")
			uerr := &url.Error{Op: "Get", URL: "http://example.test", Err: err}
			assert.Equal(t, tt.want, uerr.Timeout(), "url.Error.Timeout")
			var ne net.Error
			require.ErrorAs(t, error(uerr), &ne)
			assert.Equal(t, tt.want, ne.Timeout(), "net.Error.Timeout")
		})
	}
}

// A nil service fails with an error matching rampart.ErrNilService: at
// construction through Wrap, on every call through a layer's Wrap.
func TestHedge_NilService(t *testing.T) {
	cfg := hedge.Config[string, string]{Hedgeable: always, Budget: budgettest.New(0)}
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := hedge.NewLayer(cfg)
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "hedge: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}

func TestHedge_RT10_CopyRefusedByTheBreakerIsRefunded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			if calls.Add(1) == 1 {
				time.Sleep(100 * ms) // the original, a HalfOpen breaker's only probe
				return "slow", nil
			}
			return "", &circuitbreaker.OpenError{} // every probe slot taken
		})
		b := budgettest.New(10)
		svc, err := wrap.Service(inner, hedge.NewLayer, hedge.Config[string, string]{Hedgeable: always, Budget: b, Delay: 10 * ms, MaxAttempts: 2})
		require.NoError(t, err)

		resp, err := svc.Call(t.Context(), "req")

		require.NoError(t, err)
		assert.Equal(t, "slow", resp)
		assert.Equal(t, int32(2), calls.Load())
		assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 1, Refunds: 1}, b.Counts(), "the copy the breaker refused gave its token back")
	})
}

// hedge and retry follow one rule for MaxAttempts: 0 is the default, 1
// disables, and above the package's MaxAttemptsLimit is an error, never
// clamped.
func TestHedge_RT12_MaxAttemptsAboveTheLimitIsAnError(t *testing.T) {
	cfg := hedge.Config[string, string]{Hedgeable: always, Budget: budgettest.New(0), MaxAttempts: hedge.MaxAttemptsLimit}
	_, err := hedge.NewLayer(cfg)
	require.NoError(t, err, "the limit itself is accepted")

	cfg.MaxAttempts = hedge.MaxAttemptsLimit + 1
	_, err = hedge.NewLayer(cfg)
	assert.EqualError(t, err, "hedge: MaxAttempts must be 0 (the default, 2) or between 1 and 16, got 17")
}
