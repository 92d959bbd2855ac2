package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fakeCommand(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// The default profile is the first built-in agent, in AgentInfos order,
// whose command (as the profiles stand, overrides included) is on PATH.
func TestPickDefaultProfile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	if got := PickDefaultProfile(MergeProfiles(nil), "/kandev"); got != DefaultProfile {
		t.Fatalf("nothing on PATH: %s", got)
	}
	fakeCommand(t, dir, "qwen")
	fakeCommand(t, dir, "opencode")
	if got := PickDefaultProfile(MergeProfiles(nil), "/kandev"); got != "qwen" {
		t.Fatalf("qwen and opencode on PATH: %s, want qwen (first in order)", got)
	}
	// An override of codex whose command is on PATH counts; the built-in's
	// command (codex-acp) is not there.
	fakeCommand(t, dir, "my-codex")
	ps := MergeProfiles([]Profile{{Name: "codex", Command: "my-codex"}})
	if got := PickDefaultProfile(ps, "/kandev"); got != "codex" {
		t.Fatalf("codex override on PATH: %s", got)
	}
}

func TestCannotStartHint(t *testing.T) {
	claude, _ := BuiltinProfile("claude")
	h := CannotStartHint(claude)
	a, _ := AgentInfoFor("claude")
	for _, want := range []string{a.Install, "kandev profile add claude --command CMD", "kandev doctor"} {
		if !strings.Contains(h, want) {
			t.Errorf("hint %q lacks %q", h, want)
		}
	}
	if h := CannotStartHint(Profile{Name: "mine", Command: "x"}); strings.Contains(h, "install it") || strings.Contains(h, "npm") {
		t.Errorf("a user profile gets no install command: %q", h)
	}
}

// Every built-in but mock has its install command and credentials.
func TestEveryBuiltinHasAgentInfo(t *testing.T) {
	for _, p := range BuiltinProfiles() {
		if p.Name == DefaultProfile {
			continue
		}
		a, ok := AgentInfoFor(p.Name)
		if !ok || a.Install == "" || len(a.Credentials) == 0 {
			t.Errorf("%s: %+v", p.Name, a)
		}
	}
}
