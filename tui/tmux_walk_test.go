package tui_test

import (
	"context"
	"fmt"
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

// TestTmuxOperatorWalk is issue 22's walk as a new user, at 80×24 and
// 120×40 with the real binary, the mock agent, a temp home and repository:
// create a task in the repository from the UI with a two-line prompt,
// watch its agent full screen, refuse its permission request (typing words
// first, which must choose nothing), open a shell in its worktree, then
// merge and archive it in one dialog. With KANDEV_WALK_CAPTURES=FILE the
// screens of both sizes are written to FILE.
func TestTmuxOperatorWalk(t *testing.T) {
	needTmux(t)
	var caps strings.Builder
	t.Cleanup(func() {
		if out := os.Getenv("KANDEV_WALK_CAPTURES"); out != "" {
			_ = os.WriteFile(out, []byte(caps.String()), 0o644)
		}
	})
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			fmt.Fprintf(&caps, "════ %d×%d ════\n", size[0], size[1])
			operatorWalk(t, size[0], size[1], &caps)
		})
	}
}

func operatorWalk(t *testing.T, w, h int, caps *strings.Builder) {
	repo := gitRepo(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_PERMISSION=ask"))
	s := startTmuxIn(t, d, repo, w, h, "SHELL=/bin/sh", "PS1=$ ")
	capture := func(what string) {
		fmt.Fprintf(caps, "──── %s ────\n%s\n", what, strings.TrimRight(s.screen(), "\n"))
	}
	s.waitText("● live", "0 tasks")
	capture("kandev in a fresh home, started in the repository")

	// Create the task from the UI, in the repository: it gets a worktree.
	s.keys("n")
	s.waitText("New task")
	s.text("Tidy the deploy script")
	s.keys("Tab")
	// Two lines, each a directive the mock agent runs in turn.
	s.text("mock: say reading the deploy script")
	s.keys("C-j")
	s.text("mock: permission ./deploy.sh --env staging")
	if scr := s.waitText("mock: say reading the deploy script", "mock: permission ./deploy.sh"); strings.Contains(scr, "scriptmock") {
		t.Fatalf("the two lines ran together:\n%s", scr)
	}
	capture("n: the new task, its prompt on two lines")
	s.keys("Enter")
	s.waitText("created task")
	tasks, err := d.Client.ListTasks(context.Background(), api.ListTasksInput{})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %+v %v", tasks, err)
	}
	task := tasks[0]
	if task.Workspace == nil || task.Workspace.Mode != core.WorkspaceWorktree {
		t.Fatalf("a task created in a repository should get a worktree: %+v", task.Workspace)
	}
	wt := task.Workspace.Dir

	// Watch it full screen: the permission request arrives.
	s.waitRow(task.ID, "?you")
	s.keys("z")
	s.waitText("conversation · following", "reading the deploy script", "asks permission to run: ./deploy.sh", "?you (a to answer)")
	capture("z: the agent full screen, asking permission")

	// Refuse it: typed words choose nothing and enter sends nothing; n does.
	s.keys("a")
	s.waitText("Permission for task "+task.ID, "1) Allow once", "3) Reject", "(nothing chosen)")
	capture("a: the permission dialog, nothing chosen")
	s.text("no, dont")
	s.keys("Enter")
	s.waitText("nothing was sent")
	capture(`typed "no, dont" and enter: nothing sent`)
	if agentSaid(t, d, task.ID, "permission:") {
		t.Fatal("typed words answered the permission")
	}
	s.keys("n")
	s.waitText("> 3) Reject")
	s.keys("Enter")
	daemontest.Eventually(t, 20*time.Second, "the refusal to reach the agent", func() bool {
		return agentSaid(t, d, task.ID, "permission: reject")
	})
	s.waitText("permission: reject")
	capture("n and enter: refused, the agent says so")

	// Give it work to merge, and watch it land.
	s.keys("m")
	s.waitText("Message task " + task.ID)
	s.text("mock: write NOTES.md deploys need a second pair of eyes")
	s.keys("Enter")
	s.waitText("wrote NOTES.md")
	capture("m: a message; the full-screen log follows the agent's edit")
	s.keys("z")
	s.waitText("+1 −0 in 1 file")
	// Its turn ended without handing it on: it reads ◑ back to you, not
	// ○ todo as if it never ran (ADR 0070).
	if r := s.waitRow(task.ID, "◑", "@you"); strings.Contains(r, "○") {
		t.Fatalf("the task back to you reads todo: %q", r)
	}

	// Step into the worktree with a shell, and back.
	s.keys("S")
	// The banner says where the shell is and how to come back, before its prompt.
	s.waitFor("the shell's banner and prompt", func(scr string) bool {
		lines := strings.Split(strings.TrimSpace(scr), "\n")
		return strings.HasPrefix(lines[0], "kandev: a shell in ") &&
			strings.Contains(scr, "exit or ctrl+d comes back to kandev") &&
			strings.HasPrefix(strings.TrimSpace(lines[len(lines)-1]), "$") && !strings.Contains(scr, "● live")
	})
	s.text("pwd; git status --short; cat NOTES.md; echo task=$KANDEV_TASK")
	s.keys("Enter")
	s.waitText("task="+task.ID, "NOTES.md")
	scr := s.screen()
	capture("S: a shell in the task's worktree")
	if !strings.Contains(scr, wt) {
		t.Fatalf("the shell is not in the worktree %s:\n%s", wt, scr)
	}
	s.text("exit")
	s.keys("Enter")
	s.waitText("back from the shell in", "(task "+task.ID+")")
	capture("exit: back in kandev")

	// Merge and archive in one dialog.
	s.keys("M")
	s.waitText("Merge task "+task.ID+"'s branch?", "NOTES.md")
	s.keys("Tab")
	s.waitText("[x] squash into one commit")
	capture("M: merge, squashed")
	s.keys("Enter")
	s.waitText("Mark task " + task.ID + " done and archive it?")
	capture("merged: the dialog offers to finish the task")
	s.keys("y")
	s.waitText("done, archived", "0 tasks")
	capture("y: done and archived; the tree is empty")
	if b, err := os.ReadFile(filepath.Join(repo, "NOTES.md")); err != nil || !strings.Contains(string(b), "second pair of eyes") {
		t.Fatalf("the main checkout lacks the merged NOTES.md: %q %v", b, err)
	}
	got, err := d.Client.GetTask(context.Background(), task.ID)
	if err != nil || got.Status != core.StatusDone || !got.Archived {
		t.Fatalf("the task after the walk: %s archived=%v (%v)", got.Status, got.Archived, err)
	}
	status := exec.Command(d.Bin, "status", "--short")
	status.Env = append(os.Environ(), d.Env...)
	out, err := status.CombinedOutput()
	fmt.Fprintf(caps, "──── kandev status --short ────\n%s", out)
	if err != nil {
		t.Fatalf("status --short: %v\n%s", err, out)
	}

	// kandev daemon stop with the UI open: the daemon stays stopped until R.
	stop := exec.Command(d.Bin, "daemon", "stop")
	stop.Env = append(os.Environ(), d.Env...)
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("daemon stop: %v\n%s", err, out)
	}
	s.waitText("the daemon stopped", "R starts it again", "(try 2,")
	capture("kandev daemon stop in another terminal: the UI starts none")
	if _, err := d.Client.Version(context.Background()); err == nil {
		t.Fatal("a daemon answers: the UI started one by itself")
	}
	s.keys("R")
	s.waitText("● live", "reconnected to the daemon")
	t.Cleanup(func() { stopSpawnedDaemon(t, d) })
	capture("R: the daemon started again")
	s.keys("q")
	s.waitText("kandev exited with status 0")
}
