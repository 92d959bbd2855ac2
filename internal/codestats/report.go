package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// writeText prints the report as plain text, in a stable order.
func writeText(out io.Writer, r Report, hubs int) error {
	w := bufio.NewWriter(out)
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	b := r.Bars
	files, lines := 0, 0
	for _, pk := range r.Packages {
		files += pk.Files
		lines += pk.Lines
	}
	which := "non-test files"
	if r.TestsIncluded {
		which = "files, tests included"
	}
	p("codestats %s: %s, %s, %d lines (%s)\n", strings.Join(r.Patterns, " "), plural(len(r.Packages), "package"), plural(files, "file"), lines, which)
	p("bars: methods per type <= %d; file pairs both ways <= %s%%; function lines <= %d; file lines <= %d\n",
		b.Methods, fmtPct(b.BothWaysPct), b.FunctionLines, b.FileLines)

	p("\nmethods per type (declared, pointer and value receivers together; promoted by embedding apart): %d types\n", len(r.Types))
	var overTypes []string
	for _, t := range r.Types {
		flag := ""
		if t.Methods > b.Methods {
			flag = "  OVER"
			overTypes = append(overTypes, fmt.Sprintf("%s %d", t.Name, t.Methods))
		}
		prom := ""
		if len(t.Promoted) > 0 {
			parts := make([]string, 0, len(t.Promoted))
			for _, pr := range t.Promoted {
				parts = append(parts, promotionText(pr))
			}
			prom = "  promoted: " + strings.Join(parts, "; ")
		}
		p("%s\n", strings.TrimRight(fmt.Sprintf("  %5d  %-36s%s%s", t.Methods, t.Name, prom, flag), " "))
		if t.Methods > b.Methods {
			p("         by file: %s\n", byFile(t.ByFile))
		}
	}
	p("  types over %d methods: %d", b.Methods, len(overTypes))
	if len(overTypes) > 0 {
		p(" (%s)", strings.Join(overTypes, ", "))
	}
	p("\n")

	p("\nfile pairs referencing each other, per package (of all unordered pairs of files):\n")
	p("  %-28s %5s %6s %13s %13s %13s\n", "package", "files", "pairs", "both ways", "one way", "either")
	var overPkgs []string
	for _, pk := range r.Packages {
		pr := pk.Pairs
		flag := ""
		if pr.BothWaysPct > b.BothWaysPct {
			flag = "  OVER"
			overPkgs = append(overPkgs, fmt.Sprintf("%s %s%%", pk.Path, fmtPct(pr.BothWaysPct)))
		}
		p("  %-28s %5d %6d %13s %13s %13s%s\n", pk.Path, pk.Files, pr.Possible,
			countPct(pr.BothWays, pr.BothWaysPct), countPct(pr.OneWay, pr.OneWayPct),
			countPct(pr.Either, pctOf(pr.Either, pr.Possible)), flag)
	}
	p("  packages over %s%% both ways: %d", fmtPct(b.BothWaysPct), len(overPkgs))
	if len(overPkgs) > 0 {
		p(" (%s)", strings.Join(overPkgs, ", "))
	}
	p("\n")

	p("\nlongest functions (top %d of all; over %d lines: %d):\n", len(r.Funcs), b.FunctionLines, r.FuncsOver)
	for _, f := range r.Funcs {
		flag := ""
		if f.Over {
			flag = "  OVER"
		}
		p("  %5d  %-48s %s:%d%s\n", f.Lines, f.Name, f.File, f.Line, flag)
	}

	p("\nfiles over %d lines: %d\n", b.FileLines, len(r.LongFiles))
	for _, f := range r.LongFiles {
		p("  %5d  %s\n", f.Lines, f.File)
	}
	if r.Generated > 0 {
		p("  (%d generated files left out of function and file lengths)\n", r.Generated)
	}

	for _, pk := range r.Packages {
		p("\npackage %s (%s): %s, %d lines\n", pk.Path, pk.Name, plural(pk.Files, "file"), pk.Lines)
		if pk.Files > 1 {
			p("  used by most files: %s\n", hubText(pk.FileRefs, hubs, func(f FileRef) int { return f.UsedBy }))
			p("  using most files:   %s\n", hubText(pk.FileRefs, hubs, func(f FileRef) int { return f.Uses }))
		}
		p("  mutexes declared: %d\n", len(pk.Mutexes))
		for _, m := range pk.Mutexes {
			p("    %s\n", m)
		}
		p("  CodeForbidden sites: %d\n", pk.ForbiddenTotal)
		names := make([]string, 0, len(pk.ForbiddenSites))
		for f := range pk.ForbiddenSites {
			names = append(names, f)
		}
		slices.Sort(names)
		for _, f := range names {
			p("    %-24s %d\n", f, pk.ForbiddenSites[f])
		}
	}
	return w.Flush()
}

func promotionText(pr Promotion) string {
	var parts []string
	if pr.Methods > 0 {
		parts = append(parts, plural(pr.Methods, "method"))
	}
	if pr.Fields > 0 {
		parts = append(parts, plural(pr.Fields, "field"))
	}
	return strings.Join(parts, ", ") + " via " + pr.Via
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// byFile lists a type's methods per file, most first.
func byFile(m map[string]int) string {
	names := make([]string, 0, len(m))
	for f := range m {
		names = append(names, f)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, f := range names {
		parts[i] = fmt.Sprintf("%s %d", f, m[f])
	}
	return strings.Join(parts, ", ")
}

// hubText lists the n files with the highest count, highest first.
func hubText(refs []FileRef, n int, count func(FileRef) int) string {
	sorted := slices.Clone(refs)
	slices.SortStableFunc(sorted, func(a, b FileRef) int { return cmp.Or(cmp.Compare(count(b), count(a)), cmp.Compare(a.File, b.File)) })
	var parts []string
	for _, f := range sorted {
		if len(parts) == n || count(f) == 0 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", f.File, count(f)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func countPct(n int, pct float64) string {
	return fmt.Sprintf("%d %s%%", n, fmtPct(pct))
}

func pctOf(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return pct(part, whole)
}

func fmtPct(v float64) string {
	return fmt.Sprintf("%.1f", v)
}
