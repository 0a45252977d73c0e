package circuitbreaker_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

func TestBreaker_EV9_TransitionsReachTheObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		errDown := errors.New("down")
		b := newBreaker(t, circuitbreaker.Config{
			Name: "db", Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Second, Observer: &rec,
		})
		fail(t, b, 2, errDown)
		time.Sleep(time.Second)
		succeed(t, b, 1)

		ev := func(from, to string, cause error) observe.Event {
			return observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: from, To: to, Err: cause}
		}
		// The permits used by hand report their outcomes too, each after
		// the transition it caused.
		failed := observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Failure, Err: errDown}
		trip := ev("closed", "open", errDown)
		trip.Calls, trip.Failures = 2, 2 // the counts it tripped on
		require.Equal(t, []observe.Event{
			failed,
			trip,
			failed,
			ev("open", "half-open", nil),
			ev("half-open", "closed", nil),
			{Source: observe.Breaker, Name: "db", Kind: observe.Success},
		}, rec.Events())
	})
}

func TestLayer_EV12_CallOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		errDown := errors.New("down")
		b := newBreaker(t, circuitbreaker.Config{
			Name: "db", Policy: circuitbreaker.Consecutive{Failures: 2}, Observer: &rec,
			IsFailure: func(err error) bool { return !errors.Is(err, errNotFound) },
		})
		svc := wrap.Layer(rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			switch req {
			case "down":
				return "", errDown
			case "missing":
				return "", errNotFound
			case "slow":
				<-ctx.Done()
				return "", ctx.Err()
			}
			return "ok", nil
		}), circuitbreaker.NewLayer, b, nil)
		ctx := t.Context()
		_, _ = svc.Call(ctx, "ok")      // success: the fast path
		_, _ = svc.Call(ctx, "down")    // failure
		_, _ = svc.Call(ctx, "ok")      // success after a failure: recorded
		_, _ = svc.Call(ctx, "missing") // IsFailure: a success
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(time.Second, cancel)
		_, _ = svc.Call(cctx, "slow") // the caller gave up: ignored
		_, _ = svc.Call(ctx, "down")
		_, _ = svc.Call(ctx, "down") // trips
		_, errOpen := svc.Call(ctx, "ok")
		require.ErrorIs(t, errOpen, circuitbreaker.ErrOpen)

		ev := func(kind observe.Kind, err error) observe.Event {
			return observe.Event{Source: observe.Breaker, Name: "db", Kind: kind, Err: err}
		}
		require.Equal(t, []observe.Event{
			ev(observe.Success, nil),
			ev(observe.Failure, errDown),
			ev(observe.Success, nil),
			ev(observe.Success, nil),
			ev(observe.Ignored, context.Canceled),
			ev(observe.Failure, errDown),
			{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "closed", To: "open", Err: errDown, Calls: 2, Failures: 2},
			ev(observe.Failure, errDown),
			ev(observe.Rejected, errOpen),
		}, rec.Events())
	})
}

func TestLayer_EV12_DurationWhenThePolicyTimesCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		b := newBreaker(t, circuitbreaker.Config{Name: "db", Policy: circuitbreaker.SlowCalls{Threshold: time.Second}, Observer: &rec})
		errDown := errors.New("down")
		svc := wrap.Layer(rampart.ServiceFunc[time.Duration, string](func(_ context.Context, d time.Duration) (string, error) {
			time.Sleep(d)
			if d > time.Second {
				return "", errDown
			}
			return "ok", nil
		}), circuitbreaker.NewLayer, b, nil)
		_, _ = svc.Call(t.Context(), 300*time.Millisecond)
		_, _ = svc.Call(t.Context(), 2*time.Second)
		require.Equal(t, []observe.Event{
			{Source: observe.Breaker, Name: "db", Kind: observe.Success, Duration: 300 * time.Millisecond},
			{Source: observe.Breaker, Name: "db", Kind: observe.Failure, Duration: 2 * time.Second, Err: errDown},
		}, rec.Events())
	})
}

func TestLayer_EV12_ProbeDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		b := newBreaker(t, circuitbreaker.Config{
			Name:     "db",
			Policy:   circuitbreaker.SlowCalls{Threshold: time.Second, Window: circuitbreaker.Window{Size: 1}},
			CoolDown: time.Second,
			Observer: &rec,
		})
		svc := wrap.Layer(rampart.ServiceFunc[time.Duration, string](func(_ context.Context, d time.Duration) (string, error) {
			time.Sleep(d)
			return "ok", nil
		}), circuitbreaker.NewLayer, b, nil)
		_, _ = svc.Call(t.Context(), 2*time.Second) // slow: trips
		time.Sleep(time.Second)
		_, err := svc.Call(t.Context(), 300*time.Millisecond) // the probe
		require.NoError(t, err)
		var calls []observe.Event
		for _, e := range rec.Events() {
			if e.Kind != observe.Transition {
				calls = append(calls, e)
			}
		}
		require.Equal(t, []observe.Event{
			{Source: observe.Breaker, Name: "db", Kind: observe.Success, Duration: 2 * time.Second},
			{Source: observe.Breaker, Name: "db", Kind: observe.Success, Duration: 300 * time.Millisecond},
		}, calls)
		require.Equal(t, circuitbreaker.Closed, b.State().State)
	})
}

func TestLayer_EV12_PanicIsAFailure(t *testing.T) {
	var rec observetest.Recorder
	b := newBreaker(t, circuitbreaker.Config{Name: "db", Observer: &rec})
	svc := wrap.Layer(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { panic("boom") }), circuitbreaker.NewLayer, b, nil)
	require.Panics(t, func() { _, _ = svc.Call(context.Background(), "x") })
	require.Equal(t, []observe.Event{
		{Source: observe.Breaker, Name: "db", Kind: observe.Failure, Err: circuitbreaker.ErrPanicked},
	}, rec.Events())
}

// An observer costs the Closed success path no allocation (and, with
// nobody listening, nothing but a nil check: see the otel module's
// BenchmarkClosedSuccess).
func TestLayer_EV1_ObservedClosedSuccessAllocatesNothing(t *testing.T) {
	obs := observe.Func(func(context.Context, observe.Event) {})
	b := newBreaker(t, circuitbreaker.Config{Name: "db", Observer: obs})
	svc := wrap.Layer(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil }), circuitbreaker.NewLayer, b, nil)
	ctx := context.Background()
	require.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, "x") }))
}
