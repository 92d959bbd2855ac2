package tui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// TestTmuxDiffReview: at 80×24 with the real binary, the operator opens a
// task's diff, moves to the line its agent added, writes a comment with c
// and sends it with s; the agent (the mock, which runs the comment's
// "mock:" line) gets the review, and the task keeps the comment, open.
func TestTmuxDiffReview(t *testing.T) {
	needTmux(t)
	repo := gitRepo(t)
	d := daemontest.Start(t)
	ctx := context.Background()
	task, err := d.Client.CreateTask(ctx, api.CreateTaskInput{Title: "Shout", CWD: repo, Start: true,
		Prompt: `mock: write f.txt one\nTWO` + "\nmock: say wrote it"})
	if err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, 20*time.Second, "the agent to write its file", func() bool {
		return agentSaid(t, d, task.ID, "wrote it")
	})

	s := startTmux(t, d, 80, 24)
	s.waitText("● live", "1 task ·")
	s.selectRow(task.ID)
	s.waitText("+1 −0 in 1 file (v shows them)")
	s.keys("v")
	s.waitText("Diff of task "+task.ID, "▸ f.txt", "@@ -1 +1,2 @@", "+TWO", "c comment  s send")
	// The header, the hunk, " one", then "+TWO": new line 2.
	s.keys("j", "j", "j", "c")
	s.waitText("comment on f.txt:2 · enter save · esc cancel")
	s.text("mock: say got the review")
	s.keys("Enter")
	scr := s.waitText("✎ 2: mock: say got the review", "1 to send (s)")
	if lines := strings.Split(strings.TrimRight(scr, "\n"), "\n"); len(lines) > 24 {
		t.Fatalf("the diff view overflows 80×24: %d lines", len(lines))
	}
	s.keys("s")
	s.waitText("review of "+task.ID+" (1 comment)", "● 2: mock: say got the review")
	daemontest.Eventually(t, 20*time.Second, "the agent to get the review", func() bool {
		return agentSaid(t, d, task.ID, "got the review")
	})
	v, err := d.Client.TaskReview(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Comments) != 1 || v.Comments[0].File != "f.txt" || v.Comments[0].Line != 2 || v.Comments[0].State != api.ReviewOpen || v.Comments[0].Lines != "TWO" {
		t.Fatalf("kept comments = %+v", v.Comments)
	}
}
