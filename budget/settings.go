package budget

import (
	"context"
	"errors"

	"github.com/rampart-go/rampart/observe"
)

// Tuning is the part of a budget's [Config] that [Budget.Tune] changes
// while the budget is in use: what requests earn. Each field means what
// the Config field of the same name means, zero values and defaults
// included. The Window cannot change: it shapes the budget's memory.
type Tuning struct {
	// MinPerSecond is the floor: retries allowed per second whatever the
	// traffic; NoFloor for none.
	MinPerSecond int
	// Ratio is the retries each request earns.
	Ratio float64
}

// Tune changes what b's requests earn while it is in use, keeping its
// balance, or returns the error New would return for the same fields (or
// one saying that b is nil), changing nothing. Safe for concurrent use, and free for Deposit, which
// reads neither setting.
//
// What changes when: the credit already earned stays, to be spent or to
// expire with its slot of the window as before; deposits made before Tune
// earn the old Ratio and later ones the new (a deposit racing with Tune
// may earn either); each slot of the window that starts after the change holds the
// new floor, so the old floor's credit is gone one Window after the
// change. The change is reported to the budget's Observer as an event of
// kind [observe.Tuned].
func (b *Budget) Tune(t Tuning) error {
	if b == nil {
		return errors.New("budget: Tune of a nil *Budget")
	}
	_, perSecond, ratio, err := resolve(Config{MinPerSecond: t.MinPerSecond, Ratio: t.Ratio})
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.setupZero()
	b.fold() // what was deposited before the change earns the old ratio
	b.earn.Store(earnings(ratio))
	b.reserve = reserveOf(perSecond, b.window)
	b.mu.Unlock()
	if b.obs != nil {
		b.obs.Observe(context.Background(), observe.Event{Source: observe.Budget, Name: b.name, Kind: observe.Tuned})
	}
	return nil
}
