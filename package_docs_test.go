package rampart_test

import (
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPackageDocs_OpenWithQuickStart checks that every package doc of this
// module (internal packages aside) and of the rampartgrpc module opens the
// same way: one summary paragraph, then a "# Quick start" heading, then a
// code block (at most one short paragraph ending in ":" before it).
func TestPackageDocs_OpenWithQuickStart(t *testing.T) {
	docs := map[string]string{} // directory → package doc text
	fset := token.NewFileSet()
	for _, path := range publicSourceFiles(t) {
		f, err := parser.ParseFile(fset, path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			docs[filepath.Dir(path)] += f.Doc.Text()
		}
	}
	for _, dir := range []string{".", "circuitbreaker", "retry", "rampartgrpc"} {
		if docs[dir] == "" {
			t.Fatalf("no package doc found in %s", dir)
		}
	}
	var p comment.Parser
	for _, dir := range slices.Sorted(maps.Keys(docs)) {
		blocks := p.Parse(docs[dir]).Content
		if len(blocks) < 3 {
			t.Errorf("%s: the package doc has %d blocks; want a summary, # Quick start and a code block", dir, len(blocks))
			continue
		}
		if _, ok := blocks[0].(*comment.Paragraph); !ok {
			t.Errorf("%s: the package doc opens with a %T, want a summary paragraph", dir, blocks[0])
		}
		if h, ok := blocks[1].(*comment.Heading); !ok || headingText(h) != "Quick start" {
			t.Errorf("%s: the package doc's second block is %s, want the heading # Quick start", dir, describe(blocks[1]))
			continue
		}
		code := blocks[2]
		if intro, ok := code.(*comment.Paragraph); ok && len(blocks) > 3 && strings.HasSuffix(paragraphText(intro), ":") {
			code = blocks[3]
		}
		if _, ok := code.(*comment.Code); !ok {
			t.Errorf("%s: # Quick start is followed by %s, want a code block", dir, describe(code))
		}
	}
}

// publicSourceFiles returns the non-test .go files of the packages a user
// imports: this module's and its nested library modules' (rampartgrpc,
// otel, rampartredis…), internal packages aside; the nested modules of
// programs (examples, bench, cmd/…) are left out.
func publicSourceFiles(t *testing.T) []string {
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (name == "testdata" || name == "internal" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path == "examples" || path == "bench" || path == "cmd" {
				return filepath.SkipDir // programs, not packages a user imports
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func headingText(h *comment.Heading) string { return inlineText(h.Text) }

func paragraphText(p *comment.Paragraph) string { return strings.TrimSpace(inlineText(p.Text)) }

// inlineText returns the plain text of a comment's inline elements.
func inlineText(text []comment.Text) string {
	var b strings.Builder
	for _, t := range text {
		switch t := t.(type) {
		case comment.Plain:
			b.WriteString(string(t))
		case comment.Italic:
			b.WriteString(string(t))
		case *comment.Link:
			b.WriteString(inlineText(t.Text))
		case *comment.DocLink:
			b.WriteString(inlineText(t.Text))
		}
	}
	return b.String()
}

// describe names a block for a message: its kind and its first words.
func describe(b comment.Block) string {
	switch b := b.(type) {
	case *comment.Paragraph:
		s := paragraphText(b)
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return "the paragraph " + `"` + s + `"`
	case *comment.Heading:
		return "the heading # " + headingText(b)
	case *comment.Code:
		return "a code block"
	}
	return "a list"
}
