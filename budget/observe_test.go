package budget_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

func TestBudget_EV3_RefusedWithdrawal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		// A floor of one retry per second over a one-second window: one
		// retry, and no ratio credit without deposits.
		b, err := budget.New(budget.Config{Window: budget.MinWindow, MinPerSecond: 1, Name: "db", Observer: &rec})
		require.NoError(t, err)
		require.True(t, b.Withdraw())
		require.Empty(t, rec.Events())
		require.False(t, b.Withdraw())
		require.False(t, b.Withdraw())
		refused := observe.Event{Source: observe.Budget, Name: "db", Kind: observe.BudgetRefused}
		require.Equal(t, []observe.Event{refused, refused}, rec.Events())
	})
}
