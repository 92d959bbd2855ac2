// Command codestats prints the figures issues 24 and 35 measure Go
// packages by, so that anyone can check them before and after a change:
//
//	go run ./internal/codestats ./core/...
//	go run ./internal/codestats -top 30 --json ./core/engine
//
// It takes package patterns or directories as the go command does, reads
// each package's non-test files (its own _test.go files too with -tests)
// and prints:
//
//   - methods per named type, pointer and value receivers together, with
//     what embedded fields promote onto the type counted apart;
//   - per package, the unordered pairs of files that reference each other
//     both ways and one way, of all pairs, and the hub files;
//   - the longest functions and how many are over the bar;
//   - the files over the bar in lines;
//   - per package, the mutexes declared and the sites naming
//     core.CodeForbidden.
//
// Everything is resolved by go/types (imports from the compiler's export
// data, built by `go list -export`): file A references file B when an
// identifier used in A is declared in B. The bars are issue 35's: at most
// 40 methods on a type, at most 10% of a package's file pairs referencing
// each other both ways, functions of at most 80 lines, files of at most
// 600. Generated files are left out of the function and file lengths.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	fs := flag.NewFlagSet("codestats", flag.ExitOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	top := fs.Int("top", 20, "how many of the longest functions to list")
	hubs := fs.Int("hubs", 5, "how many hub files to list per package")
	tests := fs.Bool("tests", false, "include each package's own _test.go files")
	maxMethods := fs.Int("max-methods", 40, "bar: methods per type")
	maxBoth := fs.Float64("max-both", 10, "bar: percent of a package's file pairs referencing each other both ways")
	maxFunc := fs.Int("max-func", 80, "bar: lines per function")
	maxFile := fs.Int("max-file", 600, "bar: lines per file")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: codestats [-json] [-top N] [-hubs N] [-tests] [-max-methods N] [-max-both P] [-max-func N] [-max-file N] PACKAGE...")
		fs.PrintDefaults()
	}
	// Flags may come after the patterns too (codestats ./core/... -json).
	var patterns []string
	for rest := os.Args[1:]; ; {
		_ = fs.Parse(rest)
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		patterns = append(patterns, rest[0])
		rest = rest[1:]
	}
	if len(patterns) == 0 {
		fs.Usage()
		os.Exit(2)
	}
	opt := Options{Top: *top, Tests: *tests,
		Bars: Bars{Methods: *maxMethods, BothWaysPct: *maxBoth, FunctionLines: *maxFunc, FileLines: *maxFile}}
	pkgs, err := load(patterns, opt.Tests)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codestats:", err)
		os.Exit(1)
	}
	r := measure(pkgs, opt)
	r.Patterns = patterns
	if *asJSON {
		err = writeJSON(os.Stdout, r)
	} else {
		err = writeText(os.Stdout, r, *hubs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "codestats:", err)
		os.Exit(1)
	}
}

func writeJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
