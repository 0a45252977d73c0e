package ctxerr_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/internal/ctxerr"
)

func TestReason(t *testing.T) {
	assert.NoError(t, ctxerr.Reason(context.Background()), "not done")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, context.Canceled, ctxerr.Reason(ctx), "no cause of its own")

	errShutdown := errors.New("shutting down")
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(errShutdown)
	err := ctxerr.Reason(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, errShutdown)
	assert.Equal(t, "context canceled: shutting down", err.Error())
}
