package budgettest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/internal/budgettest"
)

func TestNew_GrantsTheAllowanceAndCounts(t *testing.T) {
	b := budgettest.New(2)
	b.Deposit()
	got := []bool{b.Withdraw(), b.Withdraw(), b.Withdraw()}
	b.Refund()
	assert.Equal(t, []bool{true, true, false}, got)
	assert.False(t, b.Withdraw(), "a refund is counted, not given back")
	assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 2, Refused: 2, Refunds: 1}, b.Counts())
	assert.Equal(t, int64(4), b.Withdrawals())

	b.Reset()
	assert.Equal(t, budgettest.Counts{}, b.Counts())
}

func TestNew_UnlimitedAndZero(t *testing.T) {
	all, none := budgettest.New(budgettest.Unlimited), new(budgettest.Budget)
	for range 3 {
		assert.True(t, all.Withdraw())
		assert.False(t, none.Withdraw())
	}
	assert.Equal(t, budgettest.Counts{Granted: 3}, all.Counts())
	assert.Equal(t, budgettest.Counts{Refused: 3}, none.Counts())
}

func TestOver_AsksTheInnerBudgetAndPassesRefundsOn(t *testing.T) {
	inner, err := budget.New(budget.Config{MinPerSecond: budget.NoFloor, Ratio: 1})
	assert.NoError(t, err)
	b := budgettest.Over(inner)
	b.Deposit()
	assert.True(t, b.Withdraw())
	assert.False(t, b.Withdraw())
	b.Refund()
	assert.Equal(t, 1.0, inner.Balance(), "the refund reached the inner budget")
	assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 1, Refused: 1, Refunds: 1}, b.Counts())
}
