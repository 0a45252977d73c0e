package budget_test

import (
	"fmt"

	"github.com/rampart-go/rampart/budget"
)

// With a ratio of 0.1 and no floor, ten requests earn exactly one retry.
func Example() {
	b, err := budget.New(budget.Config{Ratio: 0.1, MinPerSecond: budget.NoFloor})
	if err != nil {
		panic(err)
	}
	for range 25 {
		b.Deposit() // once per request
	}
	retries := 0
	for b.Withdraw() { // once per retry
		retries++
	}
	fmt.Println(retries, b.Balance())
	// Output: 2 0.5
}

// The defaults allow 10 retries per second (a full window of them at
// first) plus 20% of the requests of the last 10 seconds.
func ExampleNew() {
	b, err := budget.New(budget.Config{})
	if err != nil {
		panic(err)
	}
	fmt.Println(b.Balance())

	_, err = budget.New(budget.Config{Ratio: 1000})
	fmt.Println(err)
	// Output:
	// 100
	// budget: Ratio must be 0 (the default, 0.2) or between 1e-06 and 100, got 1000
}
