package daemon_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Issue 21: what running the real agent CLIs end to end found after issue
// 15's fixes, each quirk taught to the mock agent and each rule held
// through the real binary.

// gitRepo makes a repository with a tracked file in sub/ and an untracked
// directory new/, committed on main.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	dir := t.TempDir()
	for _, d := range []string{"sub/deep", "new"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "deep", "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new", "local.txt"), []byte("untracked\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "Test"},
		{"config", "user.email", "test@example.com"}, {"add", "sub"}, {"commit", "-q", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// A task created in a subdirectory of a repository works in the same
// subdirectory of its worktree: tracked (sub/deep) or not yet in the
// branch (new/, made in the worktree).
func TestSubdirectoryOfRepositoryKeptInWorktree(t *testing.T) {
	repo := gitRepo(t)
	d := daemontest.Start(t)
	for _, rel := range []string{"sub/deep", "new"} {
		task := create(t, d, core.CreateTaskInput{Title: "in " + rel, CWD: filepath.Join(repo, rel), Start: true,
			Prompt: "mock: write here.txt written"})
		waitSaid(t, d, task.ID, "wrote here.txt")
		got := get(t, d, task.ID)
		if got.Workspace == nil || got.Workspace.Dir == "" {
			t.Fatalf("%s: task has no worktree: %+v", rel, got.Workspace)
		}
		want := filepath.Join(got.Workspace.Dir, rel)
		if got.CWD != want {
			t.Errorf("%s: task works in %s, want %s", rel, got.CWD, want)
		}
		if _, err := os.Stat(filepath.Join(want, "here.txt")); err != nil {
			t.Errorf("%s: the agent did not write in %s: %v", rel, want, err)
		}
	}
}
