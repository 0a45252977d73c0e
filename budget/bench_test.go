package budget_test

import (
	"testing"

	"github.com/rampart-go/rampart/budget"
)

func BenchmarkDeposit(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		bg := mustNew(b, budget.Config{})
		b.ReportAllocs()
		for b.Loop() {
			bg.Deposit()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		bg := mustNew(b, budget.Config{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bg.Deposit()
			}
		})
	})
}

func BenchmarkWithdraw(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		bg := mustNew(b, budget.Config{Ratio: 1})
		b.ReportAllocs()
		for b.Loop() {
			bg.Deposit()
			bg.Withdraw()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		bg := mustNew(b, budget.Config{Ratio: 1})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bg.Deposit()
				bg.Withdraw()
			}
		})
	})
	b.Run("empty", func(b *testing.B) {
		bg := mustNew(b, budget.Config{MinPerSecond: budget.NoFloor, Ratio: budget.MinRatio})
		b.ReportAllocs()
		for b.Loop() {
			bg.Withdraw()
		}
	})
}
