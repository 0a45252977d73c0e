package ratelimit_test

import (
	"time"

	"github.com/rampart-go/rampart/clock"
)

// newFake returns a clock.Fake for the tests.
func newFake() *clock.Fake {
	return clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
}
