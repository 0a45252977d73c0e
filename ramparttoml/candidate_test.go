package ramparttoml_test

import (
	"testing"

	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/ramparttoml"
)

// TestFile_NZ1_NilFile: Candidate of a nil *File is an error, not a
// panic.
func TestFile_NZ1_NilFile(t *testing.T) {
	var f *ramparttoml.File
	nilcheck.Calls(t, []nilcheck.Call{{
		Name: "Candidate",
		Call: func() any { c, err := f.Candidate("a"); return []any{c, err.Error()} },
		Want: []any{ramparttoml.Candidate{}, "ramparttoml: Candidate of a nil *File (read one with ramparttoml.Load or Parse)"},
	}})
}
