package budget_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

// A Tune keeps the balance; later deposits earn the new ratio, and the
// new floor fills the window slot by slot.
func TestTune_ST2_KeepsTheBalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec observetest.Recorder
		b := mustNew(t, budget.Config{Window: 10 * time.Second, MinPerSecond: budget.NoFloor, Ratio: 0.5, Name: "b", Observer: &rec})
		deposit(b, 10)
		require.NoError(t, b.Tune(budget.Tuning{MinPerSecond: budget.NoFloor, Ratio: 0.1}))
		assert.Equal(t, 5.0, b.Balance(), "what was earned stays")
		deposit(b, 10)
		assert.Equal(t, 6.0, b.Balance(), "ten more deposits earn one retry")
		require.NoError(t, b.Tune(budget.Tuning{MinPerSecond: 1, Ratio: 0.1}))
		time.Sleep(10 * time.Second)
		assert.Equal(t, 10.0, b.Balance(), "a window later: the old credit expired, the new floor of 1 a second filled it")
		n := 0
		for _, e := range rec.Events() {
			if e.Kind == observe.Tuned && e.Name == "b" {
				n++
			}
		}
		assert.Equal(t, 2, n, "each change is an event")
	})
}

// A bad Tuning is New's error, and changes nothing.
func TestTune_ST2_BadTuning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{MinPerSecond: budget.NoFloor, Ratio: 0.5})
		assert.EqualError(t, b.Tune(budget.Tuning{Ratio: -1}), "budget: Ratio must be 0 (the default, 0.2) or between 1e-06 and 100, got -1")
		deposit(b, 2)
		assert.Equal(t, 1.0, b.Balance(), "still half a retry a request")
	})
}

// Tune of a nil *Budget is an error, not a panic.
func TestTune_ST2_NilBudget(t *testing.T) {
	var b *budget.Budget
	assert.EqualError(t, b.Tune(budget.Tuning{}), "budget: Tune of a nil *Budget")
}

// Tune is safe while retries flow (run with -race), on a zero Budget too.
func TestTune_ST2_WhileInUse(t *testing.T) {
	var b budget.Budget
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 300 {
				if i == 0 {
					require.NoError(t, b.Tune(budget.Tuning{Ratio: 0.1 * float64(1+j%5)}))
					continue
				}
				b.Deposit()
				b.Withdraw()
			}
		})
	}
	wg.Wait()
}
