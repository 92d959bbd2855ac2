package tui_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// gitRepo makes a repository in a temp dir with one commit holding f.txt.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("config", "user.name", "Test")
	git("config", "user.email", "test@example.com")
	git("config", "commit.gpgsign", "false")
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-q", "-m", "initial")
	return dir
}

// TestTmuxDiffView: a task in a real repository gets its own worktree;
// its agent (the mock's write directive) adds a file and the test edits
// a tracked one in the worktree. At 80×24 the detail pane shows the
// branch, the change summary and the directory; v opens the diff with its
// file list and hunks, in colour; tab goes to the next file; esc closes.
func TestTmuxDiffView(t *testing.T) {
	needTmux(t)
	repo := gitRepo(t)
	d := daemontest.Start(t)
	ctx := context.Background()
	task, err := d.Client.CreateTask(ctx, api.CreateTaskInput{Title: "Write the notes", CWD: repo, Start: true,
		Prompt: "mock: write notes/hello.txt hello from the agent\nmock: say wrote it"})
	if err != nil {
		t.Fatal(err)
	}
	if task.Workspace == nil || task.Workspace.Mode != core.WorkspaceWorktree {
		t.Fatalf("a task in a git repository should get a worktree: %+v", task.Workspace)
	}
	daemontest.Eventually(t, 20*time.Second, "the agent to write its file", func() bool {
		return agentSaid(t, d, task.ID, "wrote it")
	})
	if err := os.WriteFile(filepath.Join(task.Workspace.Dir, "f.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	s := startTmux(t, d, 80, 24)
	s.waitText("● live", "1 task ·")
	s.selectRow(task.ID)
	s.waitText("branch "+task.Workspace.Branch, "+2 −1 in 2 files (v shows them)", "dir "+task.Workspace.Dir[:min(len(task.Workspace.Dir), 70)])

	s.keys("v")
	scr := s.waitText("Diff of task "+task.ID, "+2 −1 in 2 files", "> f.txt", "notes/hello.txt", "▸ f.txt", "@@ -1 +1 @@", "-one", "+two",
		"▸ notes/hello.txt", "+hello from the agent")
	if lines := strings.Split(strings.TrimRight(scr, "\n"), "\n"); len(lines) > 24 {
		t.Fatalf("the diff view overflows 80×24: %d lines", len(lines))
	}
	esc := s.tmux("capture-pane", "-p", "-e", "-t", "kandev")
	for _, l := range strings.Split(esc, "\n") {
		if strings.Contains(l, "hello from the agent") && !colorSGR.MatchString(l) {
			t.Fatalf("the added line is not coloured: %q", l)
		}
	}
	s.keys("Tab")
	s.waitText("> notes/hello.txt")
	s.keys("Escape")
	s.waitFor("the tree again", func(scr string) bool {
		return !strings.Contains(scr, "Diff of task") && strings.HasPrefix(row(scr, task.ID), ">")
	})

	// A child made in the UI works in its parent's worktree, as the CLI's
	// does; asked for, it gets a worktree of its own from the parent's branch.
	for _, c := range []struct {
		title string
		keys  []string
	}{
		{"Child inheriting", []string{"Tab", "Tab", "Tab", "Tab", "Tab", "Tab", "Space", "Enter"}},
		{"Child on its own", []string{"Tab", "Tab", "Tab", "Tab", "Tab", "Tab", "Space", "Tab", "Space", "Enter"}},
	} {
		s.selectRow(task.ID)
		s.keys("n")
		s.waitText("New task", "parent", task.ID+" Write the notes", "‹ inherit ›")
		s.text(c.title)
		s.keys(c.keys...)
		s.waitText(": " + c.title)
	}
	tasks, err := d.Client.ListTasks(ctx, api.ListTasksInput{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*core.Workspace{}
	for _, tk := range tasks {
		full, err := d.Client.GetTask(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		got[tk.Title] = full.Workspace
	}
	if w := got["Child inheriting"]; w == nil || w.Mode != core.WorkspaceInherit || w.Dir != task.Workspace.Dir || w.Branch != task.Workspace.Branch {
		t.Fatalf("the default child should work in its parent's worktree %s: %+v", task.Workspace.Dir, w)
	}
	if w := got["Child on its own"]; w == nil || w.Mode != core.WorkspaceWorktree || w.Dir == task.Workspace.Dir || w.Branch == task.Workspace.Branch {
		t.Fatalf("the child asked for a worktree should have its own: %+v", w)
	}
	s.keys("q")
	s.waitText("kandev exited with status 0")
}
