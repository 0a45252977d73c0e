package budget_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rampart-go/rampart/budget"
)

// unit is the budget's fixed-point scale: the units of one retry.
const unit = 1 / budget.MinRatio

// FuzzBudget runs a script of deposits, withdrawals, refunds and waits
// against a budget and a model of its bounds, in virtual time. Each op byte's low two
// bits choose the operation and the rest its size. Invariants: the balance
// is never negative; it never exceeds a window of floor plus Ratio times the
// deposits of the live slots; and the retries withdrawn never exceed the
// floor credit issued (a full window at the start, then one slot's share
// per slot) plus Ratio times all deposits, counting a refunded withdrawal
// as never made.
func FuzzBudget(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 1}, uint32(100_000), int16(-1), uint8(10))
	f.Add([]byte{4, 1, 2, 1, 6, 1, 255, 1, 1}, uint32(200_000), int16(0), uint8(1))
	f.Add([]byte{252, 252, 1, 5, 1, 1, 42, 1, 3, 3}, uint32(333_333), int16(7), uint8(60))
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1}, uint32(1), int16(1), uint8(1))
	f.Fuzz(func(t *testing.T, ops []byte, ratioPPM uint32, perSecond int16, windowSeconds uint8) {
		ops = ops[:min(len(ops), 1024)]
		cfg := budget.Config{
			Window:       time.Duration(windowSeconds) * time.Second,
			MinPerSecond: int(perSecond),
			Ratio:        float64(ratioPPM) / unit,
		}
		synctest.Test(t, func(t *testing.T) {
			b, err := budget.New(cfg)
			if err != nil {
				return
			}
			window, earn, reserve := resolve(cfg)
			slotLen := window / 10
			start := time.Now()
			slot := func() int64 { return int64(time.Since(start) / slotLen) }
			var deposits [10]struct{ slot, n int64 } // the live slots' deposits, by slot % 10
			var total, withdrawn int64

			check := func() {
				bal := b.Balance()
				units := int64(math.Round(bal * unit))
				if units < 0 {
					t.Fatalf("balance %v < 0", bal)
				}
				cur := slot()
				var live int64
				for _, d := range deposits {
					if d.slot > cur-10 {
						live += d.n
					}
				}
				if bound := reserve + earn*live; units > bound {
					t.Fatalf("balance %d units > bound %d (reserve %d, %d live deposits)", units, bound, reserve, live)
				}
				issued := reserve + reserve*cur/10 + 1 // floor shares of slots 1..cur, rounded up
				if withdrawn*unit > issued+earn*total {
					t.Fatalf("withdrew %d retries, more than floor %d + ratio credit %d units", withdrawn, issued, earn*total)
				}
			}
			for _, op := range ops {
				arg := int64(op >> 2)
				switch op & 3 {
				case 0:
					for range arg + 1 {
						b.Deposit()
					}
					s := slot()
					if d := &deposits[s%10]; d.slot != s {
						*d = struct{ slot, n int64 }{slot: s}
					}
					deposits[s%10].n += arg + 1
					total += arg + 1
				case 1:
					switch {
					case arg&1 == 1 && withdrawn > 0: // refund a retry not sent
						b.Refund()
						withdrawn--
					case b.Withdraw():
						withdrawn++
					}
				case 2:
					time.Sleep(time.Duration(arg) * slotLen / 7) // crosses boundaries at odd points
				case 3:
					time.Sleep(time.Duration(arg) * slotLen)
					synctest.Wait()
				}
				check()
			}
		})
	})
}

// resolve applies New's documented defaults and returns the window, the
// units a deposit earns and the floor units per window.
func resolve(cfg budget.Config) (window time.Duration, earn, reserve int64) {
	window, perSecond, ratio := cfg.Window, cfg.MinPerSecond, cfg.Ratio
	if window == 0 {
		window = budget.DefaultWindow
	}
	switch perSecond {
	case 0:
		perSecond = budget.DefaultMinPerSecond
	case budget.NoFloor:
		perSecond = 0
	}
	if ratio == 0 {
		ratio = budget.DefaultRatio
	}
	// A deposit earns ratio*unit rounded down; a ratio with at most six
	// decimals is exact.
	earn = int64(math.Floor(ratio * unit))
	if math.Round(ratio*unit)/unit == ratio {
		earn = int64(math.Round(ratio * unit))
	}
	return window, earn, int64(perSecond) * int64(window/time.Microsecond)
}
