package bench_test

import (
	"sync/atomic"
	"testing"

	"github.com/rampart-go/rampart/budget"
)

// The retry budget on its own. Deposit runs on every request; its floor is
// one atomic add to a counter shared by every goroutine. Withdraw runs
// before every retry: "rampart" deposits then withdraws (Ratio 1, so every
// withdrawal is granted), "rampart-refused" withdraws from a budget that
// holds nothing. No peer has a comparable budget: failsafe-go's budget
// bounds concurrent retries by in-flight executions and exposes no
// deposit or withdraw.

func BenchmarkBudgetDeposit(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		var n atomic.Int64
		b.ReportAllocs()
		for b.Loop() {
			n.Add(1)
		}
	})
	b.Run("rampart", func(b *testing.B) {
		bud := newBudget(b, budget.Config{})
		b.ReportAllocs()
		for b.Loop() {
			bud.Deposit()
		}
	})
}

func BenchmarkBudgetDepositParallel(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				n.Add(1)
			}
		})
	})
	b.Run("rampart", func(b *testing.B) {
		bud := newBudget(b, budget.Config{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bud.Deposit()
			}
		})
	})
}

func BenchmarkBudgetWithdraw(b *testing.B) {
	b.Run("rampart", func(b *testing.B) {
		bud := newBudget(b, budget.Config{Ratio: 1})
		b.ReportAllocs()
		for b.Loop() {
			bud.Deposit()
			if !bud.Withdraw() {
				b.Fatal("withdrawal refused")
			}
		}
	})
	b.Run("rampart-refused", func(b *testing.B) {
		bud := newBudget(b, budget.Config{MinPerSecond: budget.NoFloor})
		b.ReportAllocs()
		for b.Loop() {
			if bud.Withdraw() {
				b.Fatal("withdrawal granted from an empty budget")
			}
		}
	})
}

func BenchmarkBudgetWithdrawParallel(b *testing.B) {
	b.Run("rampart", func(b *testing.B) {
		bud := newBudget(b, budget.Config{Ratio: 1})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bud.Deposit()
				bud.Withdraw()
			}
		})
	})
	b.Run("rampart-refused", func(b *testing.B) {
		bud := newBudget(b, budget.Config{MinPerSecond: budget.NoFloor})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bud.Withdraw()
			}
		})
	})
}
