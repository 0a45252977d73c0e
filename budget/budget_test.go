package budget_test

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

func mustNew(t testing.TB, cfg budget.Config) *budget.Budget {
	t.Helper()
	b, err := budget.New(cfg)
	require.NoError(t, err)
	return b
}

func deposit(b *budget.Budget, n int) {
	for range n {
		b.Deposit()
	}
}

// withdrawAll withdraws until the budget refuses and returns how many
// withdrawals succeeded.
func withdrawAll(b *budget.Budget) int {
	n := 0
	for b.Withdraw() {
		n++
	}
	return n
}

func TestBudget_RT6_RatioIsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{MinPerSecond: budget.NoFloor, Ratio: 0.1})
		assert.False(t, b.Withdraw(), "no traffic, no floor: no retry")

		deposit(b, 9)
		assert.Equal(t, 0.9, b.Balance())
		assert.False(t, b.Withdraw(), "nine requests at 0.1 do not earn a retry")

		b.Deposit()
		assert.True(t, b.Withdraw(), "the tenth does")
		assert.False(t, b.Withdraw())

		deposit(b, 35)
		assert.Equal(t, 3, withdrawAll(b))
		assert.Equal(t, 0.5, b.Balance())
	})
}

func TestBudget_RT6_RatioAboveOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{MinPerSecond: budget.NoFloor, Ratio: 2.5})
		deposit(b, 2)
		assert.Equal(t, 5, withdrawAll(b))
	})
}

func TestBudget_RT6_DefaultsGiveAFullWindowOfFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{})
		assert.Equal(t, 100.0, b.Balance(), "10 per second for 10 seconds")
		assert.Equal(t, 100, withdrawAll(b))
		deposit(b, 5)
		assert.Equal(t, 1.0, b.Balance(), "20% of 5 requests")
	})
}

func TestBudget_RT6_FloorRefillsOverTimeAndIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{Window: 10 * time.Second, MinPerSecond: 10, Ratio: 0.2})
		assert.Equal(t, 100, withdrawAll(b))

		time.Sleep(time.Second - time.Nanosecond)
		assert.Equal(t, 0.0, b.Balance(), "nothing before the slot turns")
		time.Sleep(time.Nanosecond)
		assert.Equal(t, 10.0, b.Balance(), "one slot of floor")

		time.Sleep(time.Hour)
		assert.Equal(t, 100.0, b.Balance(), "never more than a window of floor")
	})
}

func TestBudget_RT6_DepositsExpireAfterTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{Window: 10 * time.Second, MinPerSecond: budget.NoFloor, Ratio: 0.5})
		deposit(b, 10)
		time.Sleep(10*time.Second - time.Nanosecond)
		assert.Equal(t, 5.0, b.Balance())
		time.Sleep(time.Nanosecond)
		assert.Equal(t, 0.0, b.Balance())
	})
}

func TestBudget_RT6_DepositsExpireWithoutAWithdrawal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Deposits in every slot for a minute, never read: the timer must
		// still attribute them to their slots.
		b := mustNew(t, budget.Config{Window: 10 * time.Second, MinPerSecond: budget.NoFloor, Ratio: 0.1})
		for range 60 {
			deposit(b, 10)
			time.Sleep(time.Second)
			// Let the tick due at this same instant run first: deposits
			// racing a slot turn may count toward the slot that ends.
			synctest.Wait()
		}
		// At 60s the deposits of seconds 51..59 are live: 90 of them
		// (those of second 50 expired at 60s, a window later).
		assert.Equal(t, 9.0, b.Balance())
	})
}

func TestBudget_RT6_OldestCreditIsSpentFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{Window: 10 * time.Second, MinPerSecond: budget.NoFloor, Ratio: 0.5})
		deposit(b, 10) // slot 0: 5 retries
		time.Sleep(5 * time.Second)
		for range 3 {
			require.True(t, b.Withdraw()) // spends 3 of slot 0's 5
		}
		deposit(b, 10) // slot 5: 5 retries
		assert.Equal(t, 7.0, b.Balance())

		time.Sleep(5 * time.Second) // slot 0 expires with its last 2
		assert.Equal(t, 5.0, b.Balance())
		time.Sleep(5 * time.Second) // slot 5 expires
		assert.Equal(t, 0.0, b.Balance())
	})
}

func TestBudget_RT6_IdleBudgetCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{Window: 10 * time.Second, MinPerSecond: 1, Ratio: 0.5})
		deposit(b, 4)
		assert.Equal(t, 12.0, b.Balance())
		time.Sleep(25 * time.Second) // the timer stops after an idle slot
		deposit(b, 2)
		assert.Equal(t, 11.0, b.Balance(), "old deposits gone, floor full, new deposits counted")
	})
}

func TestBudget_RT6_ConcurrentWithdrawalsNeverOverdraw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Virtual time stands still while goroutines run, so no slot turns
		// and the accounting is exact: every unit earned is either
		// withdrawn or still in the balance.
		const workers, perWorker = 8, 2000
		b := mustNew(t, budget.Config{MinPerSecond: budget.NoFloor, Ratio: 0.3})
		var ok atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range perWorker {
					b.Deposit()
					if b.Withdraw() {
						ok.Add(1)
					}
					if bal := b.Balance(); bal < 0 {
						t.Errorf("balance %v < 0", bal)
					}
				}
			})
		}
		wg.Wait()
		earned := workers * perWorker * 3 / 10
		assert.Equal(t, int64(earned), ok.Load()+int64(b.Balance()))
		assert.LessOrEqual(t, ok.Load(), int64(earned))
		assert.Less(t, b.Balance(), 1.0, "every whole retry earned could be taken")
	})
}

func TestBudget_RT6_HammerAcrossSlotTurns(t *testing.T) {
	// Real time, so that slot turns (every 100ms with a 1s window) and the
	// timer's ticks race with deposits and withdrawals. Without a floor,
	// every retry must be paid for by four deposits, whatever expired.
	b := mustNew(t, budget.Config{Window: time.Second, MinPerSecond: budget.NoFloor, Ratio: 0.25})
	var deposits, ok atomic.Int64
	stop := time.Now().Add(350 * time.Millisecond)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				b.Deposit()
				deposits.Add(1)
				if b.Withdraw() {
					ok.Add(1)
				}
				if bal := b.Balance(); bal < 0 {
					t.Errorf("balance %v < 0", bal)
					return
				}
			}
		})
	}
	wg.Wait()
	assert.Positive(t, ok.Load())
	assert.LessOrEqual(t, 4*ok.Load(), deposits.Load(), "withdrawals never exceed Ratio times deposits")
}

func TestBudget_RT6_ConfigErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name string
		cfg  budget.Config
		want string
	}{
		{name: "short window", cfg: budget.Config{Window: time.Millisecond}, want: "budget: Window must be 0 (the default, 10s) or between 1s and 1m0s, got 1ms"},
		{name: "long window", cfg: budget.Config{Window: time.Hour}, want: "budget: Window must be 0 (the default, 10s) or between 1s and 1m0s, got 1h0m0s"},
		{name: "negative window", cfg: budget.Config{Window: -time.Second}, want: "budget: Window must be 0 (the default, 10s) or between 1s and 1m0s, got -1s"},
		{name: "negative floor", cfg: budget.Config{MinPerSecond: -2}, want: "budget: MinPerSecond must be 0 (the default, 10 per second), NoFloor (-1, no floor) or between 1 and 1000000, got -2"},
		{name: "huge floor", cfg: budget.Config{MinPerSecond: 1_000_001}, want: "budget: MinPerSecond must be 0 (the default, 10 per second), NoFloor (-1, no floor) or between 1 and 1000000, got 1000001"},
		{name: "negative ratio", cfg: budget.Config{Ratio: -0.1}, want: "budget: Ratio must be 0 (the default, 0.2) or between 1e-06 and 100, got -0.1"},
		{name: "tiny ratio", cfg: budget.Config{Ratio: 1e-7}, want: "budget: Ratio must be 0 (the default, 0.2) or between 1e-06 and 100, got 1e-07"},
		{name: "huge ratio", cfg: budget.Config{Ratio: 101}, want: "budget: Ratio must be 0 (the default, 0.2) or between 1e-06 and 100, got 101"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := budget.New(tt.cfg)
			assert.Nil(t, b)
			assert.EqualError(t, err, tt.want)
		})
	}
}

func TestStatic(t *testing.T) {
	budget.Always.Deposit()
	budget.Never.Deposit()
	budget.Always.Refund()
	budget.Never.Refund()
	assert.True(t, budget.Always.Withdraw())
	assert.False(t, budget.Never.Withdraw())
	assert.Equal(t, budget.Never, budget.Static{}, "the zero Static is Never")
}

func TestBudget_RT10_RefundGivesTheWithdrawalBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{MinPerSecond: budget.NoFloor, Ratio: 1})
		deposit(b, 2)
		require.True(t, b.Withdraw())
		assert.Equal(t, 1.0, b.Balance())

		b.Refund()

		assert.Equal(t, 2.0, b.Balance())
		assert.Equal(t, 2, withdrawAll(b))
	})
}

func TestBudget_RT10_RefundNeverExceedsTheLiveCredit(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := mustNew(t, budget.Config{MinPerSecond: budget.NoFloor, Ratio: 1, Window: time.Second})
			b.Deposit()
			require.True(t, b.Withdraw())
			time.Sleep(time.Second) // the credit the withdrawal spent has expired

			b.Refund()

			assert.Equal(t, 0.0, b.Balance(), "a refund cannot revive expired credit")
		})
	})
	t.Run("full", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := mustNew(t, budget.Config{})
			b.Refund()
			assert.Equal(t, 100.0, b.Balance(), "a full budget stays full")
		})
	})
}

func TestBudget_ZeroValueIsTheDefaultBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b budget.Budget
		assert.Equal(t, 100.0, b.Balance(), "10 per second for 10 seconds, as New(Config{})")
		assert.Equal(t, 100, withdrawAll(&b))
		deposit(&b, 5)
		assert.Equal(t, 1.0, b.Balance(), "20% of 5 requests")
		b.Refund()
		assert.Equal(t, 2.0, b.Balance())
	})
	for _, first := range []struct {
		name string
		use  func(*budget.Budget)
		left int // retries left after the first use and one deposit
	}{
		{name: "Deposit", use: (*budget.Budget).Deposit, left: 100},
		{name: "Withdraw", use: func(b *budget.Budget) { b.Withdraw() }, left: 99},
		{name: "Refund", use: (*budget.Budget).Refund, left: 100},
		{name: "Balance", use: func(b *budget.Budget) { b.Balance() }, left: 100},
	} {
		t.Run("first use is "+first.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := new(budget.Budget)
				first.use(b)
				b.Deposit()
				assert.Equal(t, first.left, withdrawAll(b))
				time.Sleep(budget.DefaultWindow)
				assert.Equal(t, 100.0, b.Balance())
			})
		})
	}
}

func TestBudget_RT6_RatioIsRoundedDownNeverUp(t *testing.T) {
	tests := []struct {
		ratio    float64
		deposits int
		want     float64
	}{
		{ratio: 0.0000015, deposits: 1, want: 0.000001},
		{ratio: 0.0000019999, deposits: 1, want: 0.000001},
		{ratio: 0.000002, deposits: 1, want: 0.000002},
		{ratio: 0.1234567, deposits: 1, want: 0.123456},
		{ratio: 0.3, deposits: 10, want: 3},
		{ratio: 0.7, deposits: 10, want: 7},
		{ratio: 99.9999999, deposits: 1, want: 99.999999},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.ratio), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, budget.Config{MinPerSecond: budget.NoFloor, Ratio: tt.ratio})
				deposit(b, tt.deposits)
				assert.Equal(t, tt.want, b.Balance())
			})
		})
	}
}

func TestBudget_DepositDoesNotAllocate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{})
		b.Deposit() // the first deposit creates the timer
		assert.Zero(t, testing.AllocsPerRun(1000, b.Deposit))
		assert.Zero(t, testing.AllocsPerRun(1000, func() { b.Withdraw() }))
		assert.Zero(t, testing.AllocsPerRun(1000, b.Refund))
	})
}

func TestBudget_RT10_ConcurrentRefundsRestoreTheBalanceExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.Config{MinPerSecond: budget.NoFloor, Ratio: 1})
		deposit(b, 100)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 1000 {
					if b.Withdraw() {
						b.Refund()
					}
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 100.0, b.Balance())
	})
}

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

// TestBudget_NZ1_NilBudget calls every exported method of a nil *Budget:
// it holds no credit, so it grants no retry, and nothing panics.
func TestBudget_NZ1_NilBudget(t *testing.T) {
	var b *budget.Budget
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Deposit", Call: func() any { b.Deposit(); return b.Balance() }, Want: 0.0},
		{Name: "Withdraw", Call: func() any { return b.Withdraw() }, Want: false},
		{Name: "Refund", Call: func() any { b.Refund(); return b.Balance() }, Want: 0.0},
		{Name: "Balance", Call: func() any { return b.Balance() }, Want: 0.0},
		{Name: "Tune", Call: func() any { return b.Tune(budget.Tuning{}).Error() }, Want: "budget: Tune of a nil *Budget"},
	})
}

// TestNew_NZ1_NilPointerClockIsAnError: a Clock that is a nil pointer inside the interface is refused
// at construction, not dereferenced at the first reading mid-traffic.
func TestNew_NZ1_NilPointerClockIsAnError(t *testing.T) {
	_, err := budget.New(budget.Config{Clock: (*clock.Fake)(nil)})
	assert.EqualError(t, err, "budget: Clock must not be a nil func or pointer, got *clock.Fake(nil)")
}
