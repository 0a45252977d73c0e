package circuitbreaker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
)

// noSuccesses is an observe.Selector that wants every kind of event but a
// breaker's successes, and records what it is told.
type noSuccesses struct{ observetest.Recorder }

func (*noSuccesses) Wants(k observe.Kind) bool { return k != observe.Success }

// A breaker does not report successes to an Observer that does not want
// them, on any path (the layer, Run, a Permit's Success and DoneContext,
// a HalfOpen probe's success through the slow path), and reports every
// other outcome as before.
func TestBreaker_EV16_NoSuccessesToAnObserverThatDoesNotWantThem(t *testing.T) {
	var obs noSuccesses
	sw := &circuitbreaker.Switch{}
	b := newBreaker(t, circuitbreaker.Config{Name: "db", Policy: circuitbreaker.Consecutive{Failures: 2}, Observer: &obs, Switch: sw})
	errDown := errors.New("down")
	svc := wrap.Layer(rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
		if req == "down" {
			return "", errDown
		}
		return "ok", nil
	}), circuitbreaker.NewLayer, b, nil)
	ctx := context.Background()

	_, _ = svc.Call(ctx, "ok")
	_, _ = circuitbreaker.Run(ctx, b, func(context.Context) (string, error) { return "ok", nil })
	p, err := b.TryAcquire()
	require.NoError(t, err)
	require.True(t, p.Success())
	p, err = b.TryAcquire()
	require.NoError(t, err)
	require.True(t, p.DoneContext(ctx, nil))
	_, _ = svc.Call(ctx, "down") // a failure pending: the next success takes the slow path
	_, _ = svc.Call(ctx, "ok")
	require.Equal(t, []observe.Event{
		{Source: observe.Breaker, Name: "db", Kind: observe.Failure, Err: errDown},
	}, obs.Events(), "four quiet successes and one counted under the lock, none reported")

	sw.ForceOpen(nil)
	_, err = svc.Call(ctx, "ok")
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)
	events := obs.Events()
	require.Len(t, events, 3)
	require.Equal(t, observe.Transition, events[1].Kind)
	require.Equal(t, observe.Rejected, events[2].Kind, "a rejection is reported")
	require.ErrorIs(t, events[2].Err, circuitbreaker.ErrOpen)
}

// TestNew_NZ1_NilPointerClockIsAnError: a Clock that is a nil pointer inside the interface is refused
// at construction, not dereferenced at the first reading mid-traffic.
func TestNew_NZ1_NilPointerClockIsAnError(t *testing.T) {
	_, err := circuitbreaker.New(circuitbreaker.Config{Clock: (*clock.Fake)(nil)})
	require.EqualError(t, err, "circuitbreaker: Clock must not be a nil func or pointer, got *clock.Fake(nil)")
}
