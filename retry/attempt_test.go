package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/retry"
)

// Each attempt's context carries its number: 1 for the first (as for any
// context), then 2, 3…
func TestAttempt_RT14_NumbersEachAttempt(t *testing.T) {
	assert.Equal(t, 1, retry.Attempt(context.Background()))
	var got []int
	svc, err := wrap.Service(rampart.ServiceFunc[int, int](func(ctx context.Context, _ int) (int, error) {
		got = append(got, retry.Attempt(ctx))
		return 0, errors.New("again")
	}), retry.NewLayer, retry.Config[int, int]{MaxAttempts: 3, Budget: budget.Always, Backoff: retry.BackoffFunc(func(int, time.Duration) time.Duration { return 0 })})
	require.NoError(t, err)
	_, _ = svc.Call(context.Background(), 0)
	assert.Equal(t, []int{1, 2, 3}, got)
}
