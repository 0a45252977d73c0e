package budget_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/internal/clocktest"
)

// A budget given a Clock turns its slots on the clock's monotonic reading:
// stepping the wall reading back an hour, or forward a day, neither keeps
// credit past its window nor expires it early.
func TestBudget_CK2_SuppliedClockIsMonotonic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktest.New()
		b := mustNew(t, budget.Config{Window: 10 * time.Second, MinPerSecond: budget.NoFloor, Ratio: 0.5, Clock: clk})
		deposit(b, 10)
		clk.Jump(-time.Hour)
		time.Sleep(10*time.Second - time.Nanosecond)
		assert.Equal(t, 5.0, b.Balance())
		clk.Jump(24 * time.Hour)
		assert.Equal(t, 5.0, b.Balance())
		time.Sleep(time.Nanosecond)
		assert.Equal(t, 0.0, b.Balance())

		assert.Zero(t, clk.Nows.Load(), "no wall reading")
		assert.NotZero(t, clk.Monos.Load())
		assert.NotZero(t, clk.Timers.Load(), "the slot timer runs on the clock")
	})
}

// Deposit reads no clock, supplied or not.
func TestBudget_CK2_DepositReadsNoClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktest.New()
		b := mustNew(t, budget.Config{Clock: clk})
		b.Deposit() // arms the timer: one reading
		before := clk.Monos.Load()
		deposit(b, 100)
		assert.Equal(t, before, clk.Monos.Load())
	})
}
