package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/retry"
)

// Without a Budget the layer has one of its own with package budget's
// defaults, so a dependency that fails every call gets far fewer retries
// than MaxAttempts would allow; budget.Always removes the bound.
func TestRetry_RT13_DefaultBudgetBoundsRetries(t *testing.T) {
	for _, tc := range []struct {
		name        string
		budget      retry.Budget
		wantAttempt int
	}{
		// 1000 first attempts, and 300 retries: the default budget's
		// reserve of 10 retries a second over its 10s window, and 20% of
		// the 1000 requests.
		{name: "no Budget: the layer's own default budget", budget: nil, wantAttempt: 1000 + 100 + 200},
		{name: "budget.Always: no bound", budget: budget.Always, wantAttempt: 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				attempts := 0
				down := rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) {
					attempts++
					return 0, errors.New("down")
				})
				noWait, err := retry.NewConstant(0)
				require.NoError(t, err)
				svc, err := wrap.Service(down, retry.NewLayer, retry.Config[int, int]{MaxAttempts: 3, Backoff: noWait, Budget: tc.budget})
				require.NoError(t, err)
				// 1000 calls, one after another, all at one instant.
				for i := range 1000 {
					_, err := svc.Call(t.Context(), i)
					require.Error(t, err)
				}
				assert.Equal(t, tc.wantAttempt, attempts)
			})
		})
	}
}
