package observetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/timeout"
)

// Exercise gives obs to a breaker named "b" that trips on one failure and
// then refuses a call, and to a timeout layer named "t" whose deadline
// ends a call, so that obs is bound (circuitbreaker.New binds it) and
// told of a transition, a failure, a refusal and a timeout. It must run
// inside testing/synctest's bubble, which makes the timeout's second
// pass at once.
func Exercise(t *testing.T, obs observe.Observer) {
	t.Helper()
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "b", Observer: obs, Policy: circuitbreaker.Consecutive{Failures: 1}})
	require.NoError(t, err)
	boom := errors.New("boom")
	_, err = circuitbreaker.Run(t.Context(), br, func(context.Context) (int, error) { return 0, boom })
	require.ErrorIs(t, err, boom)
	_, err = circuitbreaker.Run(t.Context(), br, func(context.Context) (int, error) { return 1, nil })
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)

	to, err := timeout.NewLayer(timeout.Config[int, int]{Name: "t", Timeout: time.Second, Observer: obs})
	require.NoError(t, err)
	_, err = to.Wrap(rampart.ServiceFunc[int, int](func(ctx context.Context, _ int) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})).Call(t.Context(), 1)
	require.ErrorIs(t, err, timeout.ErrTimeout)
}
