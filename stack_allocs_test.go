package rampart_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// The full stack, timeout -> retry + budget -> breaker, allocates on a
// succeeding call exactly what a bare context.WithTimeoutCause does: the
// deadline context is the only cost that is not zero, and it is inherent.
func TestStack_SuccessAllocatesOnlyTheDeadlineContext(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	rb, err := budget.New(budget.Config{})
	require.NoError(t, err)
	rt, err := retry.NewLayer(retry.Config[int, int]{Budget: rb})
	require.NoError(t, err)
	to, err := timeout.NewLayer(timeout.Config[int, int]{Timeout: time.Second})
	require.NoError(t, err)
	backend := rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req, nil })
	svc := rampart.NewBuilder[int, int]().Layer(to).Layer(rt).Layer(circuitbreaker.NewLayer[int, int](br, nil)).Service(backend)

	ctx := context.Background()
	stack := testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, 1) })

	cause := errors.New("deadline")
	bare := testing.AllocsPerRun(1000, func() {
		c, cancel := context.WithTimeoutCause(ctx, time.Second, cause)
		_, _ = backend.Call(c, 1)
		cancel()
	})
	assert.Equal(t, bare, stack)

	noTimeout := rampart.NewBuilder[int, int]().Layer(rt).Layer(circuitbreaker.NewLayer[int, int](br, nil)).Service(backend)
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _, _ = noTimeout.Call(ctx, 1) }))
}
