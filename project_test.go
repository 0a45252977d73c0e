package rampart_test

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxLayerConstructors is the most exported functions, over every package
// of this module and of the nested modules, that may return a Layer or a
// Service: about one per behaviour (DESIGN.md "API shape").
const maxLayerConstructors = 35

// layerOrService matches a result type that is a rampart Layer or Service,
// or one of the adapters' aliases of them.
var layerOrService = regexp.MustCompile(`(^|\.)(Server)?(Layer|Service)(\[|$)`)

// layerName is the name the root package doc gives a layer constructor:
// NewLayer, or New<Kind>Layer for a package's second behaviour.
var layerName = regexp.MustCompile(`^New([A-Z][A-Za-z]*)?Layer$`)

// TestAPIShape_LayerAndServiceConstructors counts the exported functions
// that return a Layer or a Service, holds the count at
// maxLayerConstructors, and checks that every such function of a core
// layer package is named as the root package doc says. Run with -v to see
// the list.
func TestAPIShape_LayerAndServiceConstructors(t *testing.T) {
	// Named otherwise, each for its reason: the root's own services, the
	// type-changing adapters of mapping (a Layer keeps its types), and the
	// HTTP adapter's layers, which need no type arguments.
	exempt := map[string]bool{
		"rampart.Failing": true, "rampart.Invoke": true,
		"mapping.Request": true, "mapping.Response": true, "mapping.Result": true,
	}
	var found []string
	fset := token.NewFileSet()
	for _, path := range publicSourceFiles(t) {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil || !returnsLayerOrService(fn) {
				continue
			}
			name := f.Name.Name + "." + fn.Name.Name
			found = append(found, filepath.Dir(path)+": "+name)
			core := !strings.HasPrefix(f.Name.Name, "rampart") // ramparthttp, rampartgrpc, …: the adapters' own rule
			if core && !exempt[name] && !layerName.MatchString(fn.Name.Name) {
				t.Errorf("%s returns a Layer or Service but is not named NewLayer or New<Kind>Layer", name)
			}
		}
	}
	sort.Strings(found)
	t.Logf("%d exported functions return a Layer or a Service:\n%s", len(found), strings.Join(found, "\n"))
	if len(found) > maxLayerConstructors {
		t.Errorf("%d exported functions return a Layer or a Service, want at most %d: one constructor per behaviour", len(found), maxLayerConstructors)
	}
	if len(found) < 15 {
		t.Fatalf("found %d; the walk missed packages", len(found))
	}
}

// returnsLayerOrService reports whether one of fn's results is a Layer or
// a Service.
func returnsLayerOrService(fn *ast.FuncDecl) bool {
	for _, r := range fn.Type.Results.List {
		if layerOrService.MatchString(types.ExprString(r.Type)) {
			return true
		}
	}
	return false
}

// TestAPIShape_RootImportsOnlyTheStandardLibrary checks that the root
// package, which every layer imports for the shared refusal and hint,
// depends on nothing but the standard library.
func TestAPIShape_RootImportsOnlyTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		checked++
		for _, p := range imports(t, path) {
			if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
				t.Errorf("%s imports %s: the root package must import only the standard library", path, p)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files")
	}
}

// TestAPIShape_LayersDoNotImportSiblingLayers checks that no layer package
// imports another: what they share lives in the root package. (budget is
// a primitive, not a layer: retry makes its default budget with it.)
func TestAPIShape_LayersDoNotImportSiblingLayers(t *testing.T) {
	layers := []string{"circuitbreaker", "retry", "timeout", "ratelimit", "concurrency", "loadshed", "hedge", "fallback", "coalesce", "filter", "mapping", "record"}
	isLayer := map[string]bool{}
	for _, l := range layers {
		isLayer["github.com/rampart-go/rampart/"+l] = true
	}
	for _, l := range layers {
		files, err := filepath.Glob(filepath.Join(l, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", l, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			for _, p := range imports(t, path) {
				if isLayer[p] && p != "github.com/rampart-go/rampart/"+l {
					t.Errorf("%s imports %s: a layer does not import a sibling layer", path, p)
				}
			}
		}
	}
}

// imports returns the import paths of the Go file at path.
func imports(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, imp := range f.Imports {
		list = append(list, strings.Trim(imp.Path.Value, `"`))
	}
	return list
}

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

// contractID matches a DESIGN.md contract ID such as CB4, RT3 or TO1
// (at most three digits, so a staticcheck code such as ST1005 is none).
var contractID = regexp.MustCompile(`\b(CB|RT|TO|HT|LM|EV|CK|SM|GR|FL|OP|PG|NZ|HG|PN|SH|ST)[0-9]{1,3}\b`)

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

// conventionalTestFiles are the test files that may have no namesake source
// file, in any package (DESIGN.md "Packages"): the package's examples, its
// test helpers (with their race and non-race variants), its TestMain, its
// benchmarks of the package as a whole, and the exports of internals to its
// external tests.
var conventionalTestFiles = map[string]bool{
	"example_test.go":        true,
	"helpers_test.go":        true,
	"helpers_race_test.go":   true,
	"helpers_norace_test.go": true,
	"main_test.go":           true,
	"bench_test.go":          true,
	"export_test.go":         true,
}

// rootTestFiles are the root package's test files about the project or
// about several packages at once: project_test.go checks the whole tree
// (API shape, package docs, contract IDs, this layout) and stack_test.go
// the layers composed into one stack.
var rootTestFiles = map[string]bool{
	"project_test.go": true,
	"stack_test.go":   true,
}

// TestLayout_TestFilesLiveBesideWhatTheyTest checks every test file of
// every module: x_test.go, or x_internal_test.go for tests inside the
// package, tests x.go of its folder; otherwise it has a conventional name,
// or it is example_<name>_test.go holding one whole-file example (the form
// go doc shows with the types it declares). The bench module holds no
// library code: each of its test files is one scenario and declares that
// scenario's benchmarks.
func TestLayout_TestFilesLiveBesideWhatTheyTest(t *testing.T) {
	var stray []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") || conventionalTestFiles[name] {
			return nil
		}
		if strings.HasPrefix(name, "example_") {
			if !isWholeFileExample(t, path) {
				stray = append(stray, path+" (an example_<name>_test.go holds one whole-file example: one Example and the declarations it shows)")
			}
			return nil
		}
		dir := filepath.Dir(path)
		if dir == "." && rootTestFiles[name] {
			return nil
		}
		if dir == "bench" {
			if !declaresBenchmark(t, path) {
				stray = append(stray, path+" (a bench scenario declares Benchmark functions)")
			}
			return nil
		}
		stem := strings.TrimSuffix(name, "_test.go")
		for _, source := range []string{stem, strings.TrimSuffix(stem, "_internal")} {
			if _, err := os.Stat(filepath.Join(dir, source+".go")); err == nil {
				return nil
			}
		}
		stray = append(stray, path)
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, stray, "test files with neither a namesake source file nor a conventional name")
}

// declaresBenchmark reports whether the Go file at path declares a
// Benchmark function.
func declaresBenchmark(t *testing.T, path string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Benchmark") {
			return true
		}
	}
	return false
}

// isWholeFileExample reports whether the Go file at path is what go doc
// shows as a whole-file example: one Example function, no test or
// benchmark, and at least one other declaration.
func isWholeFileExample(t *testing.T, path string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	examples, others := 0, 0
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		switch {
		case ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example"):
			examples++
		case ok && fn.Recv == nil && (strings.HasPrefix(fn.Name.Name, "Test") || strings.HasPrefix(fn.Name.Name, "Benchmark") || strings.HasPrefix(fn.Name.Name, "Fuzz")):
			return false
		case ok:
			others++
		case decl.(*ast.GenDecl).Tok != token.IMPORT:
			others++
		}
	}
	return examples == 1 && others > 0
}

// TestNilReceivers_NZ1_TypeDocsSayWhatANilOneDoes lists every exported
// type, in every module, with an exported method on a pointer receiver,
// and checks that the type's doc comment says what a nil one does ("a nil
// *T", "a nil or zero T"): such a method can be called on a nil pointer
// the caller holds, and must not panic (each package's
// Test<Type>_NZ1_Nil<Type> calls them). Internal packages, examples and
// the bench module are not API.
func TestNilReceivers_NZ1_TypeDocsSayWhatANilOneDoes(t *testing.T) {
	fset := token.NewFileSet()
	docs := map[string]string{}      // dir.Type -> its doc comment
	withMethods := map[string]bool{} // dir.Type with an exported pointer method
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (name == "internal" || name == "testdata" || name == "vendor" || name == "examples" || name == "bench" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						docs[dir+"."+ts.Name.Name] = strings.Join(strings.Fields(decl.Doc.Text()+" "+ts.Doc.Text()), " ")
					}
				}
			case *ast.FuncDecl:
				if decl.Recv == nil || !decl.Name.IsExported() {
					continue
				}
				star, ok := decl.Recv.List[0].Type.(*ast.StarExpr)
				if !ok {
					continue
				}
				recv := star.X
				switch x := recv.(type) {
				case *ast.IndexExpr:
					recv = x.X
				case *ast.IndexListExpr:
					recv = x.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
					withMethods[dir+"."+id.Name] = true
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, withMethods)
	var silent []string
	for key := range withMethods {
		typ := key[strings.LastIndex(key, ".")+1:]
		if !regexp.MustCompile(`\bnil (or zero )?\*?` + typ + `\b`).MatchString(docs[key]) {
			silent = append(silent, key)
		}
	}
	sort.Strings(silent)
	assert.Empty(t, silent, "types whose doc does not say what a nil one does (\"A nil *T ...\")")
}
