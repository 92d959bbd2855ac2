package main

import (
	"cmp"
	"go/ast"
	"go/token"
	"go/types"
	"math"
	"slices"
	"strings"
)

// Report is what one run measures (also the --json output).
type Report struct {
	Patterns      []string  `json:"patterns"`
	TestsIncluded bool      `json:"tests_included"`
	Bars          Bars      `json:"bars"`
	Packages      []Package `json:"packages"`
	// Types holds every named type with a declared or promoted method or
	// a promoted field, most methods first.
	Types []Type `json:"types"`
	// FuncsOver counts the functions longer than Bars.FunctionLines.
	FuncsOver int    `json:"functions_over_bar"`
	Funcs     []Func `json:"longest_functions"`
	// LongFiles holds every file longer than Bars.FileLines, longest first.
	LongFiles []File `json:"files_over_bar"`
	// Generated counts the files skipped as generated (// Code generated
	// ... DO NOT EDIT.) by the function and file lengths.
	Generated int `json:"generated_files_skipped"`
}

// Bars are the limits issue 35 measures by; figures over them are
// flagged.
type Bars struct {
	Methods       int     `json:"max_methods_per_type"`
	BothWaysPct   float64 `json:"max_both_ways_pct"`
	FunctionLines int     `json:"max_function_lines"`
	FileLines     int     `json:"max_file_lines"`
}

// Package is one package's figures.
type Package struct {
	Path       string `json:"path"` // relative to its module
	ImportPath string `json:"import_path"`
	Name       string `json:"name"`
	Files      int    `json:"files"`
	Lines      int    `json:"lines"`
	Pairs      Pairs  `json:"file_pairs"`
	// FileRefs holds, per file, how many other files use it and how many
	// it uses, by file name.
	FileRefs       []FileRef      `json:"file_refs"`
	Mutexes        []string       `json:"mutexes"`
	ForbiddenSites map[string]int `json:"code_forbidden_sites"`
	ForbiddenTotal int            `json:"code_forbidden_total"`
}

// Pairs counts the unordered pairs of a package's files by how they
// reference each other: file A references file B when an identifier in A
// resolves (by go/types) to something declared in B — a package-level
// const, var, type or func, a method or a struct field.
type Pairs struct {
	Possible    int     `json:"possible"`
	BothWays    int     `json:"both_ways"`
	OneWay      int     `json:"one_way"`
	Either      int     `json:"either"`
	BothWaysPct float64 `json:"both_ways_pct"`
	OneWayPct   float64 `json:"one_way_pct"`
}

// FileRef is one file's place in its package's reference web.
type FileRef struct {
	File   string `json:"file"`
	UsedBy int    `json:"used_by"`
	Uses   int    `json:"uses"`
}

// Type is one named type's methods.
type Type struct {
	Name    string `json:"type"` // pkg.Type
	Package string `json:"package"`
	// Methods counts the declared methods, pointer and value receivers
	// together.
	Methods int            `json:"methods"`
	ByFile  map[string]int `json:"methods_by_file,omitempty"`
	// PromotedMethods and PromotedFields count what embedded fields
	// promote onto the type (reachable by name from its package, not
	// shadowed), apart from Methods.
	PromotedMethods int         `json:"promoted_methods"`
	PromotedFields  int         `json:"promoted_fields"`
	Promoted        []Promotion `json:"promoted_via,omitempty"`
}

// Promotion is what one embedded field promotes.
type Promotion struct {
	Via     string `json:"via"`
	Methods int    `json:"methods"`
	Fields  int    `json:"fields"`
}

// Func is one function or method and its length in lines.
type Func struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	Line  int    `json:"line"`
	Lines int    `json:"lines"`
	Over  bool   `json:"over_bar"`
}

// File is one file and its length in lines.
type File struct {
	File  string `json:"file"`
	Lines int    `json:"lines"`
}

// Options shape a run.
type Options struct {
	Top   int // longest functions listed
	Tests bool
	Bars  Bars
}

// measure computes the report over the loaded packages.
func measure(pkgs []*loaded, opt Options) Report {
	r := Report{TestsIncluded: opt.Tests, Bars: opt.Bars, Packages: []Package{}, Types: []Type{}, Funcs: []Func{}, LongFiles: []File{}}
	var funcs []Func
	for _, lp := range pkgs {
		r.Packages = append(r.Packages, measurePackage(lp))
		r.Types = append(r.Types, measureTypes(lp)...)
		for i, f := range lp.Files {
			if ast.IsGenerated(f) {
				r.Generated++
				continue
			}
			if lp.Lines[i] > opt.Bars.FileLines {
				r.LongFiles = append(r.LongFiles, File{File: lp.Paths[i], Lines: lp.Lines[i]})
			}
			funcs = append(funcs, functions(lp, i)...)
		}
	}
	slices.SortFunc(r.Types, func(a, b Type) int {
		return cmp.Or(cmp.Compare(b.Methods, a.Methods),
			cmp.Compare(b.PromotedMethods+b.PromotedFields, a.PromotedMethods+a.PromotedFields),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Package, b.Package))
	})
	slices.SortFunc(funcs, func(a, b Func) int {
		return cmp.Or(cmp.Compare(b.Lines, a.Lines), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	for i := range funcs {
		if funcs[i].Lines > opt.Bars.FunctionLines {
			funcs[i].Over = true
			r.FuncsOver++
		}
	}
	r.Funcs = append(r.Funcs, funcs[:min(max(opt.Top, 0), len(funcs))]...)
	slices.SortFunc(r.LongFiles, func(a, b File) int { return cmp.Or(cmp.Compare(b.Lines, a.Lines), cmp.Compare(a.File, b.File)) })
	return r
}

// measurePackage counts a package's file pairs, hubs, mutexes and
// CodeForbidden sites.
func measurePackage(lp *loaded) Package {
	p := Package{Path: lp.Rel, ImportPath: lp.Path, Name: lp.Name, Files: len(lp.Files),
		Mutexes: []string{}, ForbiddenSites: map[string]int{}}
	index := map[*token.File]int{}
	for i, f := range lp.Files {
		index[lp.Fset.File(f.Pos())] = i
		p.Lines += lp.Lines[i]
	}
	n := len(lp.Files)
	uses := make([]map[int]bool, n)
	for i := range uses {
		uses[i] = map[int]bool{}
	}
	for id, obj := range lp.Info.Uses {
		if obj == nil || obj.Pkg() != lp.Pkg || !obj.Pos().IsValid() {
			continue
		}
		from, ok1 := index[lp.Fset.File(id.Pos())]
		to, ok2 := index[lp.Fset.File(obj.Pos())]
		if ok1 && ok2 && from != to {
			uses[from][to] = true
		}
	}
	p.Pairs.Possible = n * (n - 1) / 2
	for a := range n {
		for b := a + 1; b < n; b++ {
			switch ab, ba := uses[a][b], uses[b][a]; {
			case ab && ba:
				p.Pairs.BothWays++
			case ab || ba:
				p.Pairs.OneWay++
			}
		}
	}
	p.Pairs.Either = p.Pairs.BothWays + p.Pairs.OneWay
	if p.Pairs.Possible > 0 {
		p.Pairs.BothWaysPct = pct(p.Pairs.BothWays, p.Pairs.Possible)
		p.Pairs.OneWayPct = pct(p.Pairs.OneWay, p.Pairs.Possible)
	}
	usedBy := make([]int, n)
	for from := range n {
		for to := range uses[from] {
			usedBy[to]++
		}
	}
	for i := range n {
		p.FileRefs = append(p.FileRefs, FileRef{File: lp.Names[i], UsedBy: usedBy[i], Uses: len(uses[i])})
	}

	for i, f := range lp.Files {
		name := lp.Names[i]
		ast.Inspect(f, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.SelectorExpr:
				if x.Sel.Name == "CodeForbidden" {
					p.ForbiddenSites[name]++
					p.ForbiddenTotal++
				}
			case *ast.Field:
				if isMutex(x.Type) {
					for _, id := range x.Names {
						p.Mutexes = append(p.Mutexes, name+": "+id.Name)
					}
				}
			case *ast.ValueSpec:
				if x.Type != nil && isMutex(x.Type) {
					for _, id := range x.Names {
						p.Mutexes = append(p.Mutexes, name+": "+id.Name)
					}
				}
			}
			return true
		})
	}
	slices.Sort(p.Mutexes)
	return p
}

// pct is part of whole in percent, rounded to a tenth.
func pct(part, whole int) float64 {
	return math.Round(float64(part)*1000/float64(whole)) / 10
}

// measureTypes counts the declared and promoted methods of the package's
// named types.
func measureTypes(lp *loaded) []Type {
	var out []Type
	scope := lp.Pkg.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		t := Type{Name: lp.Name + "." + name, Package: lp.Rel, Methods: named.NumMethods()}
		if t.Methods > 0 {
			t.ByFile = map[string]int{}
			for m := range named.Methods() {
				t.ByFile[baseName(lp.Fset.Position(m.Pos()).Filename)]++
			}
		}
		t.Promoted = promotions(lp.Pkg, named)
		for _, pr := range t.Promoted {
			t.PromotedMethods += pr.Methods
			t.PromotedFields += pr.Fields
		}
		if t.Methods > 0 || t.PromotedMethods > 0 || t.PromotedFields > 0 {
			out = append(out, t)
		}
	}
	return out
}

// promotions counts, per embedded field of a struct type, the methods
// (of the pointer's method set) and fields it promotes onto the type
// that code in pkg can name.
func promotions(pkg *types.Package, named *types.Named) []Promotion {
	st, ok := named.Underlying().(*types.Struct)
	if !ok || named.TypeParams().Len() > 0 {
		return nil
	}
	counts := map[string]*Promotion{}
	var order []string
	via := func(i int) *Promotion {
		name := st.Field(i).Name()
		if counts[name] == nil {
			counts[name] = &Promotion{Via: name}
			order = append(order, name)
		}
		return counts[name]
	}
	ms := types.NewMethodSet(types.NewPointer(named))
	for sel := range ms.Methods() {
		m := sel.Obj()
		if len(sel.Index()) > 1 && (m.Exported() || m.Pkg() == pkg) {
			via(sel.Index()[0]).Methods++
		}
	}
	// Candidate field names: every field reachable through the embedded
	// fields; the lookup then keeps the ones the type really promotes.
	seen := map[*types.Named]bool{named: true}
	names := map[string]bool{}
	var walk func(t types.Type)
	walk = func(t types.Type) {
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := t.(*types.Named); ok {
			if seen[n] {
				return
			}
			seen[n] = true
		}
		s, ok := t.Underlying().(*types.Struct)
		if !ok {
			return
		}
		for f := range s.Fields() {
			names[f.Name()] = true
			if f.Embedded() {
				walk(f.Type())
			}
		}
	}
	for f := range st.Fields() {
		if f.Embedded() {
			walk(f.Type())
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		obj, index, _ := types.LookupFieldOrMethod(named, true, pkg, n)
		if v, ok := obj.(*types.Var); ok && v.IsField() && len(index) > 1 {
			via(index[0]).Fields++
		}
	}
	out := make([]Promotion, 0, len(order))
	for _, name := range order {
		out = append(out, *counts[name])
	}
	slices.SortFunc(out, func(a, b Promotion) int { return strings.Compare(a.Via, b.Via) })
	return out
}

// functions lists the declared functions and methods of one file.
func functions(lp *loaded, i int) []Func {
	var out []Func
	for _, d := range lp.Files[i].Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start := lp.Fset.Position(fd.Pos()).Line
		end := lp.Fset.Position(fd.End()).Line
		out = append(out, Func{Name: funcName(lp.Name, fd), File: lp.Paths[i], Line: start, Lines: end - start + 1})
	}
	return out
}

// funcName names a function as pkg.F, pkg.T.M or pkg.(*T).M.
func funcName(pkg string, fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) != 1 {
		return pkg + "." + fd.Name.Name
	}
	e := fd.Recv.List[0].Type
	star := false
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
			continue
		case *ast.StarExpr:
			star = true
			e = x.X
			continue
		case *ast.IndexExpr:
			e = x.X
			continue
		case *ast.IndexListExpr:
			e = x.X
			continue
		}
		break
	}
	recv := types.ExprString(e)
	if star {
		return pkg + ".(*" + recv + ")." + fd.Name.Name
	}
	return pkg + "." + recv + "." + fd.Name.Name
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

func baseName(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}
