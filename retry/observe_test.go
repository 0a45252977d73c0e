package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/retry"
)

// scripted returns a service that returns errs in turn, then succeeds.
func scripted(errs ...error) rampart.Service[string, string] {
	n := 0
	return rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		n++
		if n <= len(errs) {
			return "", errs[n-1]
		}
		return "ok", nil
	})
}

func TestRetry_EV2_Events(t *testing.T) {
	errDown := errors.New("down")
	open := &circuitbreaker.OpenError{Name: "db"}
	ev := func(kind observe.Kind, attempt int, d time.Duration, err error) observe.Event {
		return observe.Event{Source: observe.Retry, Name: "payments", Kind: kind, Attempt: attempt, Duration: d, Err: err}
	}
	tests := []struct {
		name   string
		inner  rampart.Service[string, string]
		budget retry.Budget
		want   []observe.Event
	}{
		{name: "success at once", inner: scripted()},
		{name: "success on the third attempt", inner: scripted(errDown, errDown), want: []observe.Event{
			ev(observe.Retrying, 2, 10*time.Millisecond, errDown),
			ev(observe.Retrying, 3, 10*time.Millisecond, errDown),
			ev(observe.RetryEnd, 3, 0, nil),
		}},
		{name: "attempts used up", inner: scripted(errDown, errDown, errDown), want: []observe.Event{
			ev(observe.Retrying, 2, 10*time.Millisecond, errDown),
			ev(observe.Retrying, 3, 10*time.Millisecond, errDown),
			ev(observe.RetryEnd, 3, 0, retry.ErrMaxAttempts),
		}},
		{name: "open breaker at the first attempt", inner: scripted(open), want: []observe.Event{
			ev(observe.RetryEnd, 1, 0, open),
		}},
		{name: "open breaker at a retry", inner: scripted(errDown, open), want: []observe.Event{
			ev(observe.Retrying, 2, 10*time.Millisecond, errDown),
			ev(observe.RetryEnd, 2, 0, open),
		}},
		{name: "budget empty", inner: scripted(errDown), budget: budget.Never, want: []observe.Event{
			ev(observe.RetryEnd, 1, 0, retry.ErrBudgetExhausted),
		}},
		{name: "failure not to be retried", inner: scripted(retry.Permanent(errDown))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec observetest.Recorder
				backoff, err := retry.NewConstant(10 * time.Millisecond)
				require.NoError(t, err)
				svc, err := wrap.Service(tt.inner, retry.NewLayer, retry.Config[string, string]{
					Backoff: backoff, Budget: tt.budget, Name: "payments", Observer: &rec,
				})
				require.NoError(t, err)
				_, _ = svc.Call(t.Context(), "req")
				require.Equal(t, tt.want, rec.Events())
			})
		})
	}
}

func TestRetry_EV2_EndAtCallerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		errDown := errors.New("down")
		backoff, err := retry.NewConstant(time.Second)
		require.NoError(t, err)
		svc, err := wrap.Service(scripted(errDown), retry.NewLayer, retry.Config[string, string]{Backoff: backoff, Observer: &rec})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(500*time.Millisecond, cancel)
		_, _ = svc.Call(ctx, "req")
		require.Equal(t, []observe.Event{
			{Source: observe.Retry, Kind: observe.Retrying, Attempt: 2, Duration: time.Second, Err: errDown},
			{Source: observe.Retry, Kind: observe.RetryEnd, Attempt: 1, Err: context.Canceled},
		}, rec.Events())
	})
}

func TestRetry_EV1_NoObserverNoAllocation(t *testing.T) {
	svc, err := wrap.Service(scripted(), retry.NewLayer, retry.Config[string, string]{Name: "payments"})
	require.NoError(t, err)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, "req") })
	require.Zero(t, allocs)
}
