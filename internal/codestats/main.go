// Command codestats prints the figures issue 24 measures a Go package by,
// so that anyone can check them before and after a change:
//
//	go run ./internal/codestats ./core/engine
//
// It reads the package's non-test files only and prints methods per
// receiver type, the mutexes declared, how many pairs of files reference
// each other, the longest functions and the sites naming
// core.CodeForbidden, per file. References are resolved by go/types, so a
// pair counts when an identifier used in one file is declared in the other.
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Stats is what one run reports (also its -json output).
type Stats struct {
	Package         string         `json:"package"`
	Files           int            `json:"files"`
	Methods         map[string]int `json:"methods_by_receiver"`
	Mutexes         []string       `json:"mutexes"`
	FilePairs       int            `json:"file_pairs_referencing"`
	PossiblePairs   int            `json:"file_pairs_possible"`
	LongestFuncs    []Func         `json:"longest_functions"`
	ForbiddenSites  map[string]int `json:"code_forbidden_sites"`
	ForbiddenTotals int            `json:"code_forbidden_total"`
}

// Func is one function and its length in lines.
type Func struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	Lines int    `json:"lines"`
}

func main() {
	asJSON := flag.Bool("json", false, "print JSON")
	top := flag.Int("top", 5, "how many of the longest functions to list")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: codestats [-json] [-top N] DIR")
		os.Exit(2)
	}
	st, err := measure(flag.Arg(0), *top)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codestats:", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
		return
	}
	report(st)
}

func measure(dir string, top int) (Stats, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Stats{}, err
	}
	var files []*ast.File
	names := map[*ast.File]string{}
	pkgName := ""
	for _, ent := range entries {
		name := ent.Name()
		if ent.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		// The files this platform's build would take, as go build does.
		if ok, err := build.Default.MatchFile(dir, name); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return Stats{}, err
		}
		if pkgName != "" && f.Name.Name != pkgName {
			return Stats{}, fmt.Errorf("%s: two packages, %s and %s", dir, pkgName, f.Name.Name)
		}
		pkgName = f.Name.Name
		files = append(files, f)
		names[f] = name
	}
	if len(files) == 0 {
		return Stats{}, fmt.Errorf("%s: no Go files", dir)
	}

	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(error) {}}
	if _, err := conf.Check(pkgName, fset, files, info); err != nil {
		return Stats{}, fmt.Errorf("type-check %s: %w", dir, err)
	}

	st := Stats{Package: pkgName, Files: len(files), Methods: map[string]int{}, ForbiddenSites: map[string]int{}}
	n := len(files)
	st.PossiblePairs = n * (n - 1) / 2

	fileOf := func(pos token.Pos) string { return filepath.Base(fset.Position(pos).Filename) }
	pairs := map[[2]string]bool{}
	var funcs []Func
	for _, f := range files {
		name := names[f]
		for id, obj := range info.Uses {
			if obj == nil || obj.Pkg() == nil || obj.Pkg().Name() != pkgName || !obj.Pos().IsValid() {
				continue
			}
			if fileOf(id.Pos()) != name {
				continue
			}
			other := fileOf(obj.Pos())
			if other == name || !strings.HasSuffix(other, ".go") {
				continue
			}
			key := [2]string{min(name, other), max(name, other)}
			pairs[key] = true
		}
		ast.Inspect(f, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.FuncDecl:
				lines := fset.Position(x.End()).Line - fset.Position(x.Pos()).Line + 1
				fn := x.Name.Name
				if x.Recv != nil && len(x.Recv.List) == 1 {
					recv := types.ExprString(x.Recv.List[0].Type)
					st.Methods[recv]++
					fn = "(" + recv + ")." + fn
				}
				funcs = append(funcs, Func{Name: fn, File: name, Lines: lines})
			case *ast.SelectorExpr:
				if x.Sel.Name == "CodeForbidden" {
					st.ForbiddenSites[name]++
					st.ForbiddenTotals++
				}
			case *ast.Field:
				if isMutex(x.Type) {
					for _, id := range x.Names {
						st.Mutexes = append(st.Mutexes, name+": "+id.Name)
					}
				}
			case *ast.ValueSpec:
				if x.Type != nil && isMutex(x.Type) {
					for _, id := range x.Names {
						st.Mutexes = append(st.Mutexes, name+": "+id.Name)
					}
				}
			}
			return true
		})
	}
	st.FilePairs = len(pairs)
	slices.SortFunc(funcs, func(a, b Func) int { return cmp.Or(cmp.Compare(b.Lines, a.Lines), cmp.Compare(a.Name, b.Name)) })
	st.LongestFuncs = funcs[:min(top, len(funcs))]
	slices.Sort(st.Mutexes)
	return st, nil
}

// isMutex reports a sync.Mutex or sync.RWMutex, alone or as an array.
func isMutex(e ast.Expr) bool {
	if arr, ok := e.(*ast.ArrayType); ok {
		e = arr.Elt
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "sync" && (sel.Sel.Name == "Mutex" || sel.Sel.Name == "RWMutex")
}

func report(st Stats) {
	fmt.Printf("package %s: %d files\n", st.Package, st.Files)
	recvs := make([]string, 0, len(st.Methods))
	for r := range st.Methods {
		recvs = append(recvs, r)
	}
	slices.SortFunc(recvs, func(a, b string) int { return cmp.Or(cmp.Compare(st.Methods[b], st.Methods[a]), cmp.Compare(a, b)) })
	fmt.Println("methods by receiver:")
	for _, r := range recvs {
		fmt.Printf("  %-28s %d\n", r, st.Methods[r])
	}
	fmt.Printf("mutexes declared: %d\n", len(st.Mutexes))
	for _, m := range st.Mutexes {
		fmt.Printf("  %s\n", m)
	}
	fmt.Printf("file pairs referencing each other: %d of %d\n", st.FilePairs, st.PossiblePairs)
	fmt.Println("longest functions:")
	for _, f := range st.LongestFuncs {
		fmt.Printf("  %4d  %s (%s)\n", f.Lines, f.Name, f.File)
	}
	fmt.Printf("CodeForbidden sites: %d\n", st.ForbiddenTotals)
	files := make([]string, 0, len(st.ForbiddenSites))
	for f := range st.ForbiddenSites {
		files = append(files, f)
	}
	slices.Sort(files)
	for _, f := range files {
		fmt.Printf("  %-20s %d\n", f, st.ForbiddenSites[f])
	}
}
