package circuitbreaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
)

// QuotaError is what a dependency returns when the caller's quota is spent:
// no call will succeed before the quota refills, so there is no point in
// waiting for a run of failures.
type QuotaError struct{ Refill time.Duration }

func (e *QuotaError) Error() string { return fmt.Sprintf("quota exhausted, refills in %v", e.Refill) }

// QuotaPolicy trips at the first [QuotaError] and ignores every other
// failure; one successful probe closes the breaker again.
type QuotaPolicy struct{}

func (QuotaPolicy) NewTracker() (circuitbreaker.Tracker, error) { return quotaTracker{}, nil }

// quotaTracker keeps no state: each outcome is judged on its own. A
// Tracker has three methods: Record, Probe and Reset.
type quotaTracker struct{}

func (quotaTracker) Record(c circuitbreaker.Call) bool {
	var q *QuotaError
	return errors.As(c.Err, &q)
}

func (quotaTracker) Probe(c circuitbreaker.Call, _ circuitbreaker.Probes) circuitbreaker.Verdict {
	if c.Outcome == rampart.Failure {
		return circuitbreaker.VerdictReopen
	}
	return circuitbreaker.VerdictClose
}

func (quotaTracker) Reset(circuitbreaker.State) {}

// A user-defined policy plugs in through Config.Policy (CB12): this one
// trips on a specific error type, at once, and ignores all other failures.
func Example_customPolicy() {
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy: QuotaPolicy{},
		// A clock that stands still, so that the rest of the cool-down
		// printed below is exact however long the example takes.
		Clock: clock.NewFake(time.Unix(0, 0), 0),
	})
	if err != nil {
		panic(err)
	}
	call := func(callErr error) {
		p, err := br.TryAcquire()
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
		p.Done(callErr)
		fmt.Println("called, now", br.State().State)
	}

	call(errors.New("connection reset")) // an ordinary failure: ignored by this policy
	call(errors.New("connection reset"))
	call(fmt.Errorf("list buckets: %w", &QuotaError{Refill: time.Minute}))
	call(nil)
	// Output:
	// called, now closed
	// called, now closed
	// called, now open
	// refused: circuitbreaker: open (retry after 30s): tripped by: list buckets: quota exhausted, refills in 1m0s
}
