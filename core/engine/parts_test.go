package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The rule of docs/architecture.md "The engine's parts" (ADR 0054): a part's
// state and lock are touched only in its own file; every other file goes
// through its methods. Checked on the package's source, so a new
// e.cache.mu.Lock() or e.live.sessions[...] elsewhere fails here.
func TestEnginePartsOwnTheirState(t *testing.T) {
	parts := map[string]struct{ typ, file string }{
		"cache":    {"taskCache", "cache.go"},
		"live":     {"liveRuns", "live.go"},
		"waiters":  {"waitingCalls", "waiting.go"},
		"deferred": {"deferredDeliveries", "deferred.go"},
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	// Each part's fields, from its type's declaration in its own file.
	fields := map[string]map[string]bool{}
	for field, p := range parts {
		f := files[p.file]
		if f == nil {
			t.Fatalf("part %s: file %s missing", p.typ, p.file)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || ts.Name.Name != p.typ {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				t.Fatalf("part %s is not a struct", p.typ)
			}
			fields[field] = map[string]bool{}
			for _, fl := range st.Fields.List {
				for _, id := range fl.Names {
					fields[field][id.Name] = true
				}
			}
			return false
		})
		if len(fields[field]) == 0 {
			t.Fatalf("part %s: no struct type with fields in %s", p.typ, p.file)
		}
		if !fields[field]["mu"] {
			t.Fatalf("part %s: no mu field; the rule and its test must change together", p.typ)
		}
	}
	// x.<part>.<field> outside the part's file: state reached around its owner.
	for name, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			inner, ok := sel.X.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			p, ok := parts[inner.Sel.Name]
			if !ok || name == p.file || !fields[inner.Sel.Name][sel.Sel.Name] {
				return true
			}
			t.Errorf("%s: %s.%s is %s's state: use its methods (%s)", fset.Position(sel.Pos()), inner.Sel.Name, sel.Sel.Name, p.typ, p.file)
			return true
		})
	}
}
