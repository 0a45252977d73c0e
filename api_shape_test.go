package rampart_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"regexp"
	"strings"
	"testing"
)

// layerConstructor matches the name of a layer constructor, NewLayer or
// New<Kind>Layer, and captures the kind.
var layerConstructor = regexp.MustCompile(`^New([A-Za-z]*)Layer$`)

// TestAPIShape_EveryNewLayerHasAWrapTwin checks the naming rule of the
// root package doc and DESIGN.md "API shape": in every package of this
// module and of rampartgrpc, each New<Kind>Layer has a Wrap<Kind> taking
// a service and then arguments of the same types. mapping's adapters are named
// by what they map: Error is NewErrorLayer's twin.
func TestAPIShape_EveryNewLayerHasAWrapTwin(t *testing.T) {
	twinName := map[string]string{"mapping.NewErrorLayer": "Error"}
	funcs := map[string]*ast.FuncDecl{} // "pkg.Name" → declaration
	fset := token.NewFileSet()
	for _, path := range publicSourceFiles(t) {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() {
				funcs[f.Name.Name+"."+fn.Name.Name] = fn
			}
		}
	}
	checked := 0
	for name, fn := range funcs {
		pkg, fname, _ := strings.Cut(name, ".")
		m := layerConstructor.FindStringSubmatch(fname)
		if m == nil {
			continue
		}
		checked++
		twin, ok := twinName[name]
		if !ok {
			twin = "Wrap" + m[1]
		}
		w, ok := funcs[pkg+"."+twin]
		if !ok {
			t.Errorf("%s has no twin %s.%s", name, pkg, twin)
			continue
		}
		got, want := params(w), params(fn)
		if len(got) == 0 || !strings.Contains(got[0], "Service[") || strings.Join(got[1:], ", ") != strings.Join(want, ", ") {
			t.Errorf("%s.%s takes (%s), want (a service, %s) as %s", pkg, twin, strings.Join(got, ", "), strings.Join(want, ", "), name)
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d layer constructors; the walk missed packages", checked)
	}
}

// params returns the types of fn's parameters.
func params(fn *ast.FuncDecl) []string {
	var list []string
	for _, f := range fn.Type.Params.List {
		for range max(1, len(f.Names)) {
			list = append(list, types.ExprString(f.Type))
		}
	}
	return list
}
