// Package budgettest provides the one fake retry budget that rampart's
// tests share: it grants a fixed number of withdrawals, or asks a real
// budget, and counts every deposit, withdrawal and refund so that a test
// can assert exactly what a retry or hedge layer asked of its budget.
package budgettest

import (
	"math"
	"sync/atomic"
)

// Unlimited, as the argument of [New], grants every withdrawal.
const Unlimited = math.MaxInt64

// Inner is the budget a [Budget] made by [Over] asks: retry.Budget,
// hedge.Budget and *budget.Budget all satisfy it.
type Inner interface {
	Deposit()
	Withdraw() bool
}

// Counts is what a [Budget] has been asked so far.
type Counts struct {
	Deposits int64 // calls of Deposit
	Granted  int64 // calls of Withdraw that returned true
	Refused  int64 // calls of Withdraw that returned false
	Refunds  int64 // calls of Refund
}

// Budget is a fake retry budget that counts what it is asked. It has a
// Refund method, so retry and hedge layers refund to it. A refund is only
// counted (and passed on to the inner budget of [Over] if that
// takes refunds): it does not give back a withdrawal of [New]'s allowance.
// Create it with [New] or [Over]; the zero Budget grants nothing. It is
// safe for concurrent use and allocates nothing.
type Budget struct {
	inner                              Inner // nil: the allowance in left decides
	left                               atomic.Int64
	deposits, granted, refused, refund atomic.Int64
}

// New returns a Budget that grants the first allow withdrawals and refuses
// the rest; [Unlimited] grants them all, 0 none.
func New(allow int64) *Budget {
	b := new(Budget)
	b.left.Store(allow)
	return b
}

// Over returns a Budget that passes every call on to inner (a real
// *budget.Budget, say) and counts it.
func Over(inner Inner) *Budget {
	return &Budget{inner: inner}
}

// Deposit counts a deposit.
func (b *Budget) Deposit() {
	b.deposits.Add(1)
	if b.inner != nil {
		b.inner.Deposit()
	}
}

// Withdraw grants a withdrawal while the allowance lasts (or as the inner
// budget decides) and counts the answer.
func (b *Budget) Withdraw() bool {
	var ok bool
	if b.inner != nil {
		ok = b.inner.Withdraw()
	} else if b.left.Load() == Unlimited {
		ok = true
	} else {
		ok = b.left.Add(-1) >= 0
	}
	if ok {
		b.granted.Add(1)
	} else {
		b.refused.Add(1)
	}
	return ok
}

// Refund counts a refund, and passes it on to an inner budget that takes
// refunds.
func (b *Budget) Refund() {
	b.refund.Add(1)
	if r, ok := b.inner.(interface{ Refund() }); ok {
		r.Refund()
	}
}

// Counts returns what b has been asked so far.
func (b *Budget) Counts() Counts {
	return Counts{
		Deposits: b.deposits.Load(),
		Granted:  b.granted.Load(),
		Refused:  b.refused.Load(),
		Refunds:  b.refund.Load(),
	}
}

// Withdrawals returns the number of calls of Withdraw, granted or not.
func (b *Budget) Withdrawals() int64 {
	return b.granted.Load() + b.refused.Load()
}

// Reset sets every count to zero; the allowance is left as it is.
func (b *Budget) Reset() {
	b.deposits.Store(0)
	b.granted.Store(0)
	b.refused.Store(0)
	b.refund.Store(0)
}
