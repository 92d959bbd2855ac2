package core_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The import rule of docs/architecture.md: dependencies point inward only
// (cmd, tui, mcpserve -> core -> store), core links no front end library,
// the front ends that only talk to the daemon never link the engine, the
// store or SQLite, and the mock agent stays a test and demo tool. Checked
// on the module's real import graph, so a new upward import fails here
// rather than in a review.

const module = "github.com/kandev/kandev"

// pkgInfo is one package of the module as go list sees it (tests aside).
type pkgInfo struct {
	imports []string // direct imports
	deps    []string // every package it links, transitively
}

func listModule(t *testing.T) map[string]pkgInfo {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the import rule needs the go command: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", "./...")
	cmd.Dir = ".." // the module root: this file is in core/
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list ./...: %v\n%s", err, stderr)
	}
	pkgs := map[string]pkgInfo{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 3 {
			t.Fatalf("go list line %q: want 3 tab-separated fields", line)
		}
		pkgs[f[0]] = pkgInfo{imports: strings.Fields(f[1]), deps: strings.Fields(f[2])}
	}
	for _, want := range []string{module + "/core", module + "/store", module + "/mcpserve", module + "/tui", module + "/cmd"} {
		if _, ok := pkgs[want]; !ok {
			t.Fatalf("go list did not list %s; got %d packages", want, len(pkgs))
		}
	}
	return pkgs
}

// matches reports whether path is prefix or a package under it.
func matches(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func under(pkg, room string) bool { return matches(pkg, module+"/"+room) }

func TestImportRule(t *testing.T) {
	pkgs := listModule(t)
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	slices.Sort(names)

	// forbid fails for every package selected by in whose imports (direct
	// or, with deep, transitive) fall under one of the banned prefixes.
	forbid := func(rule string, in func(pkg string) bool, deep bool, banned ...string) {
		t.Helper()
		for _, p := range names {
			if !in(p) {
				continue
			}
			list := pkgs[p].imports
			if deep {
				list = pkgs[p].deps
			}
			for _, imp := range list {
				for _, b := range banned {
					if matches(imp, b) {
						t.Errorf("%s: %s links %s", rule, p, imp)
					}
				}
			}
		}
	}

	forbid("store imports no kandev package", func(p string) bool { return under(p, "store") }, false, module)

	forbid("core is below the front ends and links none of their libraries",
		func(p string) bool { return under(p, "core") }, true,
		module+"/cmd", module+"/tui", module+"/mcpserve", module+"/internal",
		"github.com/spf13/cobra", "github.com/charmbracelet/bubbletea", "github.com/charmbracelet/bubbles",
		"github.com/charmbracelet/lipgloss", "github.com/mark3labs/mcp-go")

	forbid("the client API (core/api) imports the domain (core) alone, never the engine's parts",
		func(p string) bool { return under(p, "core/api") }, false,
		module+"/core/agent", module+"/core/capability", module+"/core/config", module+"/core/daemon",
		module+"/core/daemonclient", module+"/core/doctor", module+"/core/engine", module+"/core/hosts",
		module+"/core/notify", module+"/core/prompt", module+"/core/sandbox", module+"/core/wire",
		module+"/core/workspace", module+"/store")

	forbid("the daemon client and the wire shapes depend on core alone",
		func(p string) bool { return under(p, "core/daemonclient") || under(p, "core/wire") }, true,
		module+"/core/daemon", module+"/core/engine", module+"/core/agent", module+"/core/workspace",
		module+"/store", "modernc.org/sqlite")

	forbid("kandev mcp and the TUI speak to the daemon and never link the engine, the store or SQLite",
		func(p string) bool { return under(p, "mcpserve") || under(p, "tui") }, true,
		module+"/core/daemon", module+"/core/engine", module+"/store", "modernc.org/sqlite")

	// kandev speaks MCP with mcp-go (ADR 0047, superseding 0039), from the
	// front ends only: the bridge (mcpserve) serves with its server, the
	// mock agent's client is its client. core stays free of it (the rule
	// above, and the design: core knows no protocol library), and so do
	// the daemon and its client, which every command links.
	forbid("mcp-go is linked by kandev mcp and the mock agent only (ADR 0047)",
		func(p string) bool {
			return !under(p, "mcpserve") && !under(p, "internal/mockagent") && !under(p, "cmd")
		}, true,
		"github.com/mark3labs/mcp-go")
	if deps := pkgs[module+"/cmd/kandev"].deps; !slices.Contains(deps, "github.com/mark3labs/mcp-go/server") {
		t.Errorf("%s/cmd/kandev does not link mcp-go's server: kandev mcp must serve with it (ADR 0047)", module)
	}

	forbid("only cmd (the hidden mock-agent subcommand) and tests use the mock agent",
		func(p string) bool { return p != module+"/cmd" }, false, module+"/internal/mockagent")
}
