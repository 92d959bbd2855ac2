package mcpserve_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Issue 12, ADR 0038: a top-level task created without a profile gets the
// default profile whoever creates it, not only through `kandev task
// create`: here an agent CLI on the external surface (`kandev mcp` without
// a token) and a client of the daemon's API naming none (as the TUI's
// dialog can). The daemon picks the first built-in agent on its PATH, and
// a configured profile beats that.
func TestDefaultProfileForTasksNamingNone(t *testing.T) {
	bin := daemontest.Binary(t)
	fake := t.TempDir()
	// A Codex on PATH (the mock agent under codex-acp's name): the first
	// built-in agent found, since no claude-agent-acp is on this PATH.
	script := "#!/bin/sh\nexec " + bin + " mock-agent \"$@\"\n"
	if err := os.WriteFile(filepath.Join(fake, "codex-acp"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_PROFILE=", "PATH="+fake+string(os.PathListSeparator)+"/usr/bin:/bin"))
	c := mcpClient(t, d.Bin, "KANDEV_HOME="+d.Home.Dir)
	create := func(title string) string {
		t.Helper()
		// A cwd of its own: the bridge's would be this test's checkout, and
		// the task would get a worktree and branch in it.
		res := callTool(t, c, "create_task_kandev", map[string]any{"title": title, "start": false, "cwd": t.TempDir()})
		if res.IsError {
			t.Fatalf("create %s: %+v", title, res.Content)
		}
		p, _ := structured(t, res)["profile"].(string)
		return p
	}
	if got := create("picked from PATH"); got != "codex" {
		t.Errorf("external create without a profile: profile %q, want codex (the first built-in agent on PATH)", got)
	}
	viaAPI, err := d.Client.CreateTask(bg(), api.CreateTaskInput{Title: "through the API", CWD: t.TempDir()})
	if err != nil || viaAPI.Profile != "codex" {
		t.Errorf("API create without a profile: %q, %v; want codex", viaAPI.Profile, err)
	}

	// config.toml names one: it wins, read at the next create (no restart).
	if err := os.WriteFile(filepath.Join(d.Home.Dir, "config.toml"), []byte("profile = \"gemini\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := create("configured"); got != "gemini" {
		t.Errorf("external create with config profile gemini: %q", got)
	}
	viaAPI, err = d.Client.CreateTask(bg(), api.CreateTaskInput{Title: "configured, through the API", CWD: t.TempDir()})
	if err != nil || viaAPI.Profile != "gemini" {
		t.Errorf("API create with config profile gemini: %q, %v", viaAPI.Profile, err)
	}
	// A child still takes its parent's profile, and a named one is kept.
	child, err := d.Client.CreateTask(bg(), api.CreateTaskInput{Title: "child", ParentID: viaAPI.ID})
	if err != nil || child.Profile != "gemini" {
		t.Errorf("child: %q, %v", child.Profile, err)
	}
	named, err := d.Client.CreateTask(bg(), api.CreateTaskInput{Title: "named", Profile: "mock", CWD: t.TempDir()})
	if err != nil || named.Profile != "mock" {
		t.Errorf("named mock: %q, %v", named.Profile, err)
	}
}
