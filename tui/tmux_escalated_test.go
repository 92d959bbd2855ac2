package tui_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// TestTmuxAnswerEscalatedChildQuestion: an autopilot child asks its
// parent, whose turn ends without answering; the engine escalates the
// parent to the operator. a on the parent (which has no question of its
// own) opens the child's question, and the answer reaches the child as the
// operator's message, superseding the question (issue 22).
func TestTmuxAnswerEscalatedChildQuestion(t *testing.T) {
	needTmux(t)
	d := daemontest.Start(t)
	ctx := context.Background()
	gate := filepath.Join(t.TempDir(), "go")
	parent := createTask(t, d, api.CreateTaskInput{Title: "Plan the release", Start: true, Prompt: "mock: waitfile " + gate})
	child := createTask(t, d, api.CreateTaskInput{Title: "Pick the colour", ParentID: parent.ID, Autopilot: true, Start: true,
		Prompt: `mock: call ask_parent_question_kandev {"questions":[{"prompt":"Which colour?","options":[{"label":"blue"},{"label":"green"}]}]}`})
	daemontest.Eventually(t, 20*time.Second, "the child's question", func() bool {
		c, err := d.Client.GetTask(ctx, child.ID)
		return err == nil && c.PendingQuestion != nil && c.PendingQuestion.Kind == core.QuestionParent
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, 20*time.Second, "the parent escalated to the operator", func() bool {
		p, err := d.Client.GetTask(ctx, parent.ID)
		return err == nil && p.YourTurn && p.Stalled != nil && strings.HasPrefix(p.Stalled.Detail, "unanswered question")
	})

	s := startTmux(t, d, 80, 24)
	s.waitRow(parent.ID, "ESCALATED")
	s.selectRow(parent.ID)
	s.keys("a")
	s.waitText("Answer task "+child.ID+"'s question to task "+parent.ID, "Which colour?", "1) blue", "2) green", "(nothing chosen)")
	s.keys("2", "Enter")
	daemontest.Eventually(t, 20*time.Second, "the answer to reach the child", func() bool {
		return promptSent(t, d, child.ID, "escalated to the operator, who answers:\nWhich colour?: green")
	})
	c, err := d.Client.GetTask(ctx, child.ID)
	if err != nil || (c.PendingQuestion != nil && c.PendingQuestion.Status == core.QuestionPending) {
		t.Fatalf("the child's question still waits: %+v %v", c.PendingQuestion, err)
	}
	s.keys("q")
	s.waitText("kandev exited with status 0")
}
