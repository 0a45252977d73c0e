package rampart_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
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
