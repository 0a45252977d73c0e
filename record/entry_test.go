package record_test

import (
	"testing"

	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/record"
)

// TestEntry_NZ1_NilEntry calls every exported method of a nil *Entry: it
// is no line.
func TestEntry_NZ1_NilEntry(t *testing.T) {
	var e *record.Entry
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Retry", Call: func() any { return e.Retry() }, Want: false},
		{Name: "AppendJSON", Call: func() any { return string(e.AppendJSON([]byte("kept"))) }, Want: "kept"},
	})
}
