package record_test

import (
	"fmt"
	"time"

	"github.com/rampart-go/rampart/record"
)

// One trace line, as a Recorder writes it.
func ExampleEntry_AppendJSON() {
	e := record.Entry{
		Start:    time.Date(2026, 12, 1, 15, 0, 0, 500_000_000, time.UTC),
		Duration: 1500 * time.Microsecond,
		Outcome:  record.Failure,
		Class:    "timeout",
		Key:      "eu-1",
	}
	fmt.Print(string(e.AppendJSON(nil)))
	// Output:
	// {"start":"2026-12-01T15:00:00.5Z","duration":"1500us","outcome":"failure","class":"timeout","key":"eu-1"}
}
