package rampart_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// contractID matches a DESIGN.md contract ID such as CB4, RT3 or TO1.
var contractID = regexp.MustCompile(`\b(CB|RT|TO|HT|LM|EV|CK|SM|GR|FL|OP|PG)[0-9]+\b`)

// Contract IDs belong in DESIGN.md and in tests; a public doc comment says
// the behaviour in words. TestNoContractIDsInComments reads every comment
// of every non-test .go file of the repository, nested modules included,
// and lists each one that cites an ID.
func TestNoContractIDsInComments(t *testing.T) {
	for _, c := range []string{"// CB4", "// as RT13 says", "// (GR2, FL1)"} {
		if !contractID.MatchString(c) {
			t.Fatalf("the pattern %v misses the ID in %q", contractID, c)
		}
	}
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == "." {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, group := range f.Comments {
			for _, c := range group.List {
				if ids := contractID.FindAllString(c.Text, -1); ids != nil {
					found = append(found, fset.Position(c.Slash).String()+": "+strings.Join(ids, ", "))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("%d comments in non-test files cite a contract ID; say it in words (the IDs live in DESIGN.md and tests):\n%s",
			len(found), strings.Join(found, "\n"))
	}
}
