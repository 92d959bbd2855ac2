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

// TestTmuxMergeAndDiscard: two tasks in one real repository each rewrite
// f.txt in their own worktree (the mock's write directive). At 80×24, M
// from the diff view merges the first: the main checkout then holds its
// change. The second's merge now conflicts: the dialog shows why and the
// main checkout is unchanged. D discards the second: git then knows
// neither its worktree nor its branch.
func TestTmuxMergeAndDiscard(t *testing.T) {
	needTmux(t)
	repo := gitRepo(t)
	d := daemontest.Start(t)
	ctx := context.Background()
	var tasks []core.Task
	for _, c := range []struct{ title, text string }{{"First edit", "from the first"}, {"Second edit", "from the second"}} {
		task, err := d.Client.CreateTask(ctx, api.CreateTaskInput{Title: c.title, CWD: repo, Start: true,
			Prompt: "mock: write f.txt " + c.text + "\nmock: say wrote it"})
		if err != nil {
			t.Fatal(err)
		}
		if task.Workspace == nil || task.Workspace.Mode != core.WorkspaceWorktree {
			t.Fatalf("a task in a git repository should get a worktree: %+v", task.Workspace)
		}
		tasks = append(tasks, task)
	}
	for _, task := range tasks {
		daemontest.Eventually(t, 20*time.Second, "task "+task.ID+"'s turn to end", func() bool {
			got, err := d.Client.GetTask(ctx, task.ID)
			if err != nil || got.Session == nil || got.Queued > 0 || !agentSaid(t, d, task.ID, "wrote it") {
				return false
			}
			switch got.Session.State {
			case core.SessionCreated, core.SessionStarting, core.SessionRunning:
				return false
			}
			return true
		})
	}
	first, second := tasks[0], tasks[1]
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	mainFile := func() string {
		b, err := os.ReadFile(filepath.Join(repo, "f.txt"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	headBefore := git("rev-parse", "HEAD")

	s := startTmux(t, d, 80, 24)
	s.waitText("● live", "2 tasks")

	// Merge the first from its diff view: the confirmation says what goes where.
	s.selectRow(first.ID)
	s.keys("v")
	s.waitText("Diff of task "+first.ID, "+from the first")
	s.keys("M")
	scr := s.waitText("Merge task "+first.ID+"'s branch?", "branch   "+first.Workspace.Branch,
		"into     main (checked out in", "changes  +1 −1 in 1 file since", "f.txt", "[x] merge commit",
		"Message Merge branch '"+first.Workspace.Branch+"'")
	if lines := strings.Split(strings.TrimRight(scr, "\n"), "\n"); len(lines) > 24 {
		t.Fatalf("the confirmation overflows 80×24: %d lines", len(lines))
	}
	// A squash, whose commit carries the message shown (a merge of a
	// branch main has not moved past would fast-forward, with no message).
	s.keys("Tab")
	s.waitText("[x] squash into one commit", "Message First edit (kandev task "+first.ID+")")
	s.keys("Enter")
	s.waitText("squashed "+first.Workspace.Branch+" into main", "Mark task "+first.ID+" done and archive it?")
	s.keys("n") // kept as it is: its branch is checked below
	s.waitFor("the dialog to close", func(scr string) bool { return !strings.Contains(scr, "Merged task") })
	if got := mainFile(); got != "from the first\n" {
		t.Fatalf("after the merge the main checkout's f.txt is %q", got)
	}
	if msg := git("log", "-1", "--format=%s"); strings.TrimSpace(msg) != "First edit (kandev task "+first.ID+")" {
		t.Fatalf("the squash commit's message is %q, not the one shown", msg)
	}

	// The second now conflicts: refused in the dialog, nothing changed.
	headMerged := git("rev-parse", "HEAD")
	s.selectRow(second.ID)
	s.keys("M")
	s.waitText("Merge task "+second.ID+"'s branch?", "changes  +1 −1 in 1 file", "[x] merge commit")
	s.keys("Enter")
	scr = s.waitText("✗ refused:", "conflicts in: f.txt", "and merge again")
	if lines := strings.Split(strings.TrimRight(scr, "\n"), "\n"); len(lines) > 24 {
		t.Fatalf("the refusal overflows 80×24: %d lines", len(lines))
	}
	if got := mainFile(); got != "from the first\n" {
		t.Fatalf("a refused merge changed the main checkout's f.txt: %q", got)
	}
	if h := git("rev-parse", "HEAD"); h != headMerged || h == headBefore {
		t.Fatalf("HEAD moved on a refused merge (or the first never merged): before %s merged %s now %s", headBefore, headMerged, h)
	}
	if st := git("status", "--porcelain"); st != "" {
		t.Fatalf("a refused merge left the main checkout dirty:\n%s", st)
	}
	s.keys("Escape")
	s.waitFor("the dialog to close", func(scr string) bool { return !strings.Contains(scr, "Merge task") })

	// Discard the second from the tree: n first does nothing, y discards.
	s.keys("D")
	s.waitText("Discard task "+second.ID+"'s worktree and branch?", "branch   "+second.Workspace.Branch, "lost",
		"changes  +1 −1 in 1 file")
	s.keys("n")
	s.waitFor("the dialog to close", func(scr string) bool { return !strings.Contains(scr, "Discard task") })
	if _, err := os.Stat(second.Workspace.Dir); err != nil {
		t.Fatalf("a cancelled discard removed the worktree: %v", err)
	}
	s.keys("D")
	// y does nothing until the dialog has read the changes it names.
	s.waitText("Discard task "+second.ID+"'s worktree and branch?", "changes  +1 −1 in 1 file")
	s.keys("y")
	s.waitText("discarded worktree", "Cancel task "+second.ID+" too?")
	s.keys("y")
	s.waitText("task " + second.ID + ": ✗ cancelled")
	if got, err := d.Client.GetTask(ctx, second.ID); err != nil || got.Status != core.StatusCancelled {
		t.Fatalf("after discard and y the task is %+v (%v), not cancelled", got.Status, err)
	}
	if _, err := os.Stat(second.Workspace.Dir); !os.IsNotExist(err) {
		t.Fatalf("the discarded worktree %s is still there: %v", second.Workspace.Dir, err)
	}
	if b := git("branch", "--list", second.Workspace.Branch); strings.TrimSpace(b) != "" {
		t.Fatalf("the discarded branch is still there: %q", b)
	}
	if wl := git("worktree", "list", "--porcelain"); strings.Contains(wl, second.Workspace.Dir) {
		t.Fatalf("git still lists the discarded worktree:\n%s", wl)
	}
	// The first's worktree and branch are kept.
	if b := git("branch", "--list", first.Workspace.Branch); strings.TrimSpace(b) == "" {
		t.Fatal("the merged task's branch went too")
	}
	s.keys("q")
	s.waitText("kandev exited with status 0")
}
