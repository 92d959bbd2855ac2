package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
)

// A profile's servers go to session/new with their command found on PATH,
// arguments and environment as given, and [] (never null) for none.
func TestProfileServers(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bin, "probe-mcp")
	script := filepath.Join(dir, "srv", "server.js")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{exe, script} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	prof := core.Profile{Name: "p", MCP: true, MCPServers: []core.MCPServer{
		{Name: "probe", Command: "probe-mcp"},
		{Name: "js", Command: "/no/such/node", Args: []string{script, "--x", "/etc/passwd-not-there"}, Env: []string{"K=a=b"}},
	}}
	got := profileServers(prof, true)
	if len(got) != 2 || got[0].Stdio.Command != exe || got[1].Stdio.Command != "/no/such/node" {
		t.Fatalf("servers %+v", got)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "null") || !strings.Contains(string(b), `"args":[]`) || !strings.Contains(string(b), `"env":[]`) {
		t.Errorf("session/new servers %s: want args and env [] where empty, never null", b)
	}
	if e := got[1].Stdio.Env; len(e) != 1 || e[0].Name != "K" || e[0].Value != "a=b" {
		t.Errorf("env %+v", e)
	}
	if remote := profileServers(prof, false); remote[0].Stdio.Command != "probe-mcp" {
		t.Errorf("a host's server is the host's to find: %q", remote[0].Stdio.Command)
	}
	exes := serverExecutables(got, "/self/kandev")
	if want := []string{exe, "/no/such/node", script}; !slices.Equal(exes, want) {
		t.Errorf("executables %v, want %v", exes, want)
	}
}
