package ramparthttp_test

import (
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
)

// A Config without a Retry.Budget retries within a budget of its own, so a
// server that is down gets the default budget's retries, not MaxAttempts
// times the load; budget.Always removes the bound.
func TestNewTransport_RT13_DefaultBudgetBoundsRetries(t *testing.T) {
	noWait, err := retry.NewConstant(0)
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		budget   retry.Budget
		wantSent int
	}{
		// 200 first attempts, and 140 retries: the default budget's
		// reserve of 100 (10 a second over its 10s window) and 20% of the
		// 200 requests.
		{name: "no Retry.Budget", wantSent: 200 + 100 + 40},
		{name: "budget.Always", budget: budget.Always, wantSent: 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &down{}
				tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
					Base:  base,
					Retry: ramparthttp.RetryConfig{Backoff: noWait, Budget: tc.budget},
				})
				require.NoError(t, err)
				client := &http.Client{Transport: tr}
				for range 200 {
					resp, err := client.Get("http://backend.test/")
					require.NoError(t, err)
					assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
					resp.Body.Close()
				}
				assert.Equal(t, tc.wantSent, base.sent)
			})
		})
	}
}
