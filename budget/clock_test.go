package budget_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/clock"
)

// A budget given a Clock turns its slots on the clock's monotonic reading:
// stepping the wall reading back an hour, or forward a day, neither keeps
// credit past its window nor expires it early.
func TestBudget_CK2_SuppliedClockIsMonotonic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
		b := mustNew(t, budget.Config{Window: 10 * time.Second, MinPerSecond: budget.NoFloor, Ratio: 0.5, Clock: clk})
		deposit(b, 10)
		clk.Jump(-time.Hour)
		clk.Advance(10*time.Second - time.Nanosecond)
		assert.Equal(t, 5.0, b.Balance())
		clk.Jump(24 * time.Hour)
		assert.Equal(t, 5.0, b.Balance())
		clk.Advance(time.Nanosecond)
		assert.Equal(t, 0.0, b.Balance())

		assert.Zero(t, clk.Stats().Now, "no wall reading")
		assert.NotZero(t, clk.Stats().Monotonic)
		assert.NotZero(t, clk.Stats().AfterFunc, "the slot timer runs on the clock")
	})
}

// Deposit reads no clock, supplied or not.
func TestBudget_CK2_DepositReadsNoClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
		b := mustNew(t, budget.Config{Clock: clk})
		b.Deposit() // arms the timer: one reading
		before := clk.Stats()
		deposit(b, 100)
		assert.Equal(t, before, clk.Stats())
	})
}
