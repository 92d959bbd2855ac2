package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// listed is the part of `go list -json` output codestats reads.
type listed struct {
	ImportPath  string
	Name        string
	Dir         string
	GoFiles     []string
	CgoFiles    []string
	TestGoFiles []string
	Export      string
	DepOnly     bool
	ForTest     string
	Module      *struct{ Path string }
	Error       *struct{ Err string }
}

// loaded is one package parsed and type-checked.
type loaded struct {
	Path  string // import path
	Rel   string // import path relative to its module, e.g. core/engine
	Name  string
	Dir   string
	Fset  *token.FileSet
	Files []*ast.File
	Names []string // base names, parallel to Files
	Paths []string // paths as shown (relative to the working dir), parallel to Files
	Lines []int    // line counts, parallel to Files
	Tests []bool   // whether the file is a _test.go file, parallel to Files
	Pkg   *types.Package
	Info  *types.Info
}

// load lists the packages the patterns match (as the go command does,
// with this platform's build constraints), then parses and type-checks
// each. Imports are read from the compiler's export data, which
// `go list -export` builds, so the figures are go/types' own. With tests,
// a package's own _test.go files (not its external _test package) are
// checked with it.
func load(patterns []string, tests bool) ([]*loaded, error) {
	args := []string{"list", "-e", "-export", "-deps",
		"-json=ImportPath,Name,Dir,GoFiles,CgoFiles,TestGoFiles,Export,DepOnly,ForTest,Module,Error"}
	if tests {
		args = append(args, "-test")
	}
	args = append(args, "--")
	args = append(args, patterns...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}

	exports := map[string]string{}
	var targets []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		// Test variants ("p [p.test]") and test mains are not the
		// packages asked for, and their export data is not what an
		// import of p reads.
		if p.ForTest != "" || strings.Contains(p.ImportPath, " ") || strings.HasSuffix(p.ImportPath, ".test") {
			continue
		}
		if p.Export != "" {
			exports[p.ImportPath] = p.Export
		}
		if !p.DepOnly {
			if p.Error != nil {
				return nil, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
			}
			targets = append(targets, p)
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("no packages match %s", strings.Join(patterns, " "))
	}
	slices.SortFunc(targets, func(a, b listed) int { return strings.Compare(a.ImportPath, b.ImportPath) })

	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	cwd, _ := os.Getwd()
	var pkgs []*loaded
	for _, t := range targets {
		lp, err := check(fset, imp, cwd, t, tests)
		if err != nil {
			return nil, err
		}
		if lp != nil {
			pkgs = append(pkgs, lp)
		}
	}
	return pkgs, nil
}

// check parses and type-checks one listed package; nil when it has no
// files to measure.
func check(fset *token.FileSet, imp types.Importer, cwd string, t listed, tests bool) (*loaded, error) {
	names := slices.Concat(t.GoFiles, t.CgoFiles)
	if tests {
		names = append(names, t.TestGoFiles...)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, nil
	}
	lp := &loaded{Path: t.ImportPath, Rel: t.ImportPath, Name: t.Name, Dir: t.Dir, Fset: fset}
	if t.Module != nil {
		if t.ImportPath != t.Module.Path {
			lp.Rel = strings.TrimPrefix(t.ImportPath, t.Module.Path+"/")
		} else {
			lp.Rel = "."
		}
	}
	for _, name := range names {
		full := filepath.Join(t.Dir, name)
		src, err := os.ReadFile(full)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, full, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		shown := full
		if rel, err := filepath.Rel(cwd, full); err == nil && !strings.HasPrefix(rel, "..") {
			shown = rel
		}
		lp.Files = append(lp.Files, f)
		lp.Names = append(lp.Names, name)
		lp.Paths = append(lp.Paths, filepath.ToSlash(shown))
		lp.Lines = append(lp.Lines, countLines(src))
		lp.Tests = append(lp.Tests, strings.HasSuffix(name, "_test.go"))
	}
	lp.Info = &types.Info{
		Uses: map[*ast.Ident]types.Object{},
		Defs: map[*ast.Ident]types.Object{},
	}
	var first error
	conf := types.Config{
		Importer:    imp,
		FakeImportC: true,
		Error: func(err error) {
			if first == nil {
				first = err
			}
		},
	}
	pkg, _ := conf.Check(t.ImportPath, fset, lp.Files, lp.Info)
	if first != nil {
		return nil, fmt.Errorf("type-check %s: %w", t.ImportPath, first)
	}
	lp.Pkg = pkg
	return lp, nil
}

// countLines counts lines as wc -l does, plus a last line without its
// newline.
func countLines(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}
