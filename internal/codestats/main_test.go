package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// fixture loads and measures testdata/fixture, whose counts are known.
func fixture(t *testing.T, tests bool) Report {
	t.Helper()
	pkgs, err := load([]string{"./testdata/fixture"}, tests)
	if err != nil {
		t.Fatal(err)
	}
	return measure(pkgs, Options{Top: 3, Tests: tests,
		Bars: Bars{Methods: 2, BothWaysPct: 10, FunctionLines: 11, FileLines: 16}})
}

func findType(t *testing.T, r Report, name string) Type {
	t.Helper()
	for _, ty := range r.Types {
		if ty.Name == name {
			return ty
		}
	}
	t.Fatalf("type %s not reported; have %+v", name, r.Types)
	return Type{}
}

func TestMethods(t *testing.T) {
	r := fixture(t, false)
	c := findType(t, r, "fixture.Counter")
	if c.Methods != 3 || c.ByFile["a.go"] != 3 || c.PromotedMethods != 0 || c.PromotedFields != 0 {
		t.Errorf("Counter: %+v, want 3 methods in a.go, none promoted", c)
	}
	w := findType(t, r, "fixture.Wrapper")
	want := []Promotion{{Via: "Counter", Methods: 3, Fields: 1}}
	if w.Methods != 1 || w.PromotedMethods != 3 || w.PromotedFields != 1 || len(w.Promoted) != 1 || w.Promoted[0] != want[0] {
		t.Errorf("Wrapper: %+v, want 1 method, promoted 3 methods and 1 field via Counter", w)
	}
	if r.Types[0].Name != "fixture.Counter" || len(r.Types) != 2 {
		t.Errorf("types: %+v, want Counter first, then Wrapper", r.Types)
	}
	// With -tests the method declared in fixture_test.go counts too.
	if c := findType(t, fixture(t, true), "fixture.Counter"); c.Methods != 4 || c.ByFile["fixture_test.go"] != 1 {
		t.Errorf("Counter with tests: %+v, want 4 methods", c)
	}
}

func TestFilePairs(t *testing.T) {
	r := fixture(t, false)
	if len(r.Packages) != 1 {
		t.Fatalf("packages: %+v", r.Packages)
	}
	p := r.Packages[0]
	want := Pairs{Possible: 3, BothWays: 1, OneWay: 1, Either: 2, BothWaysPct: 33.3, OneWayPct: 33.3}
	if p.Files != 3 || p.Pairs != want {
		t.Errorf("files %d, pairs %+v; want 3 files, %+v", p.Files, p.Pairs, want)
	}
	refs := map[string]FileRef{}
	for _, f := range p.FileRefs {
		refs[f.File] = f
	}
	for name, want := range map[string]FileRef{
		"a.go": {File: "a.go", UsedBy: 2, Uses: 1},
		"b.go": {File: "b.go", UsedBy: 1, Uses: 1},
		"c.go": {File: "c.go", UsedBy: 0, Uses: 1},
	} {
		if refs[name] != want {
			t.Errorf("%s: %+v, want %+v", name, refs[name], want)
		}
	}
	if p.Lines != 14+14+17 {
		t.Errorf("lines %d, want 45", p.Lines)
	}
}

func TestLengths(t *testing.T) {
	r := fixture(t, false)
	if len(r.Funcs) != 3 {
		t.Fatalf("functions: %+v, want the top 3", r.Funcs)
	}
	long := Func{Name: "fixture.Long", File: "testdata/fixture/c.go", Line: 6, Lines: 12, Over: true}
	if r.Funcs[0] != long {
		t.Errorf("longest: %+v, want %+v", r.Funcs[0], long)
	}
	if r.FuncsOver != 1 {
		t.Errorf("functions over 11 lines: %d, want 1", r.FuncsOver)
	}
	if want := []File{{File: "testdata/fixture/c.go", Lines: 17}}; len(r.LongFiles) != 1 || r.LongFiles[0] != want[0] {
		t.Errorf("files over 16 lines: %+v, want %+v", r.LongFiles, want)
	}
}

func TestFuncNames(t *testing.T) {
	pkgs, err := load([]string{"./testdata/fixture"}, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for i := range pkgs[0].Files {
		for _, f := range functions(pkgs[0], i) {
			got[f.Name] = f.Lines
		}
	}
	for name, lines := range map[string]int{
		"fixture.(*Counter).Inc":    1,
		"fixture.Counter.Value":     1,
		"fixture.(*Counter).Reset":  1,
		"fixture.step":              1,
		"fixture.(*Wrapper).String": 1,
		"fixture.Long":              12,
	} {
		if got[name] != lines {
			t.Errorf("%s: %d lines, want %d (have %v)", name, got[name], lines, got)
		}
	}
}

func TestOutput(t *testing.T) {
	r := fixture(t, false)
	r.Patterns = []string{"./testdata/fixture"}
	var text bytes.Buffer
	if err := writeText(&text, r, 5); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"      3  fixture.Counter                       OVER\n",
		"         by file: a.go 3\n",
		"      1  fixture.Wrapper                       promoted: 3 methods, 1 field via Counter\n",
		"types over 2 methods: 1 (fixture.Counter 3)\n",
		"packages over 10.0% both ways: 1 (internal/codestats/testdata/fixture 33.3%)\n",
		"     12  fixture.Long",
		"testdata/fixture/c.go:6  OVER\n",
		"files over 16 lines: 1\n     17  testdata/fixture/c.go\n",
		"used by most files: a.go 2, b.go 1\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := writeJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Packages[0].Pairs != r.Packages[0].Pairs || findType(t, back, "fixture.Counter").Methods != 3 {
		t.Errorf("JSON round trip lost figures:\n%s", js.String())
	}
}
