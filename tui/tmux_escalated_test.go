package tui_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// mockCall is a mock directive (without "mock: ") calling a kandev tool.
func mockCall(tool string, args map[string]any) string {
	b, _ := json.Marshal(args)
	return "call " + tool + " " + string(b)
}

func mockAsk(prompt string) string {
	return mockCall("ask_parent_question_kandev", map[string]any{"questions": []map[string]any{{"prompt": prompt}}})
}

// answerReached: the task's agent was prompted with its question's
// answer, given by the person its parent is with (ADR 0069).
func answerReached(t *testing.T, d *daemontest.Daemon, id, qid, text string) bool {
	want := "who answered your question " + qid + " in its place:\n\n" + text
	for _, m := range d.Conversation(t, id) {
		if m.Kind != core.MsgPrompt {
			continue
		}
		var meta struct {
			Rendered string `json:"rendered"`
		}
		_ = json.Unmarshal(m.Meta, &meta)
		if strings.Contains(m.Text, want) || strings.Contains(meta.Rendered, want) {
			return true
		}
	}
	return false
}

func questionAnswered(t *testing.T, d *daemontest.Daemon, id, qid string) bool {
	for _, m := range d.Conversation(t, id) {
		if m.Kind != core.MsgQuestion {
			continue
		}
		var meta struct {
			ID     string `json:"question_id"`
			Status string `json:"status"`
		}
		if json.Unmarshal(m.Meta, &meta) == nil && meta.ID == qid {
			return meta.Status == string(core.QuestionAnswered)
		}
	}
	return false
}

// TestTmuxAnswerEscalatedChildQuestion: an autopilot child asks its
// parent, whose turn ends without answering; the engine escalates the
// parent to the operator. a on the parent (which has no question of its
// own) opens the child's question, and the answer reaches the child as
// the answer to its question, given in the parent's place (issues 22, 38).
func TestTmuxAnswerEscalatedChildQuestion(t *testing.T) {
	needTmux(t)
	d := daemontest.Start(t)
	ctx := context.Background()
	gate := filepath.Join(t.TempDir(), "go")
	parent := createTask(t, d, api.CreateTaskInput{Title: "Plan the release", Start: true, Prompt: "mock: waitfile " + gate})
	child := createTask(t, d, api.CreateTaskInput{Title: "Pick the colour", ParentID: parent.ID, Autopilot: true, Start: true,
		Prompt: `mock: call ask_parent_question_kandev {"questions":[{"prompt":"Which colour?","options":[{"label":"blue"},{"label":"green"}]}]}`})
	var qid string
	daemontest.Eventually(t, 20*time.Second, "the child's question", func() bool {
		c, err := d.Client.GetTask(ctx, child.ID)
		if err == nil && c.PendingQuestion != nil && c.PendingQuestion.Kind == core.QuestionParent {
			qid = c.PendingQuestion.ID
			return true
		}
		return false
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
		return answerReached(t, d, child.ID, qid, "green")
	})
	if !questionAnswered(t, d, child.ID, qid) {
		t.Fatalf("question %s is not answered", qid)
	}
	s.keys("q")
	s.waitText("kandev exited with status 0")
}

// TestTmuxEscalatedParentTwoChildren is issue 38's walk: two autopilot
// children ask their parent; its agent answers one (a) and is escalated
// for the other (b); a then asks again while the parent is with the
// operator, a question its agent never sees. a on the parent opens the
// question the escalation names (b's), then a's; both children read their
// answers and nothing waits unseen.
func TestTmuxEscalatedParentTwoChildren(t *testing.T) {
	needTmux(t)
	d := daemontest.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	gate, gateA2 := filepath.Join(dir, "go"), filepath.Join(dir, "a2")
	parent := createTask(t, d, api.CreateTaskInput{Title: "Plan the release", Start: true, Prompt: strings.Join([]string{
		"mock: on question: if route=answer: " + mockCall("message_task_kandev",
			map[string]any{"task_id": "${child_task_id}", "prompt": "blue\nround: two", "reply_to_question_id": "${question_id}"}),
		"mock: waitfile " + gate,
	}, "\n")})
	a := createTask(t, d, api.CreateTaskInput{Title: "Pick the colour", ParentID: parent.ID, Autopilot: true, Start: true, Prompt: strings.Join([]string{
		"mock: on answer: if round=two: waitfile " + gateA2,
		"mock: on answer: if round=two: " + mockAsk("Which size?"),
		"mock: " + mockAsk("Which colour?\nroute: answer"),
	}, "\n")})
	b := createTask(t, d, api.CreateTaskInput{Title: "Pick the database", ParentID: parent.ID, Autopilot: true, Start: true,
		Prompt: "mock: " + mockAsk("Which database?")})
	pending := func(id string) *core.QuestionInfo {
		c, err := d.Client.GetTask(ctx, id)
		if err != nil || c.PendingQuestion == nil || c.PendingQuestion.Status != core.QuestionPending {
			return nil
		}
		return c.PendingQuestion
	}
	var qa, qb, qa2 string
	daemontest.Eventually(t, 20*time.Second, "both children's questions", func() bool {
		if q := pending(a.ID); q != nil {
			qa = q.ID
		}
		if q := pending(b.ID); q != nil {
			qb = q.ID
		}
		return qa != "" && qb != ""
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, 20*time.Second, "the parent escalated for b's question", func() bool {
		p, err := d.Client.GetTask(ctx, parent.ID)
		return err == nil && p.YourTurn && p.Stalled != nil && p.Stalled.QuestionID == qb
	})
	if err := os.WriteFile(gateA2, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, 20*time.Second, "a's second question", func() bool {
		if q := pending(a.ID); q != nil && q.ID != qa {
			qa2 = q.ID
			return true
		}
		return false
	})

	s := startTmux(t, d, 80, 24)
	s.waitRow(parent.ID, "ESCALATED")
	s.selectRow(parent.ID)
	// Both questions are on the parent, the named one first.
	s.waitText("?you 2 from subtasks", "1. "+b.ID+" "+qb, "2. "+a.ID+" "+qa2)
	s.keys("a")
	s.waitText("Answer task "+b.ID+"'s question to task "+parent.ID, "Which database?")
	s.text("postgres")
	s.keys("Enter")
	s.waitText("answered question "+qb+" of task "+b.ID, "a opens the next")
	s.keys("a")
	s.waitText("Answer task "+a.ID+"'s question to task "+parent.ID, "Which size?")
	s.text("large")
	s.keys("Enter")
	s.waitText("answered question " + qa2 + " of task " + a.ID)
	daemontest.Eventually(t, 20*time.Second, "both answers to reach their children", func() bool {
		return answerReached(t, d, b.ID, qb, "postgres") && answerReached(t, d, a.ID, qa2, "large")
	})
	for _, c := range []struct{ task, q string }{{a.ID, qa}, {a.ID, qa2}, {b.ID, qb}} {
		if !questionAnswered(t, d, c.task, c.q) {
			t.Fatalf("question %s of %s is not answered", c.q, c.task)
		}
	}
	// Nothing waits unseen: no row asks its parent, the parent lists no
	// question and keeps no notice of one for its agent.
	s.waitFor("no ?parent left", func(scr string) bool {
		return !strings.Contains(row(scr, a.ID), "?parent") && !strings.Contains(row(scr, b.ID), "?parent") && !strings.Contains(scr, "from subtasks")
	})
	p, err := d.Client.GetTask(ctx, parent.ID)
	if err != nil || len(p.ChildQuestions) != 0 || p.Queued != 0 {
		t.Fatalf("parent: %+v queued %d %v", p.ChildQuestions, p.Queued, err)
	}
	s.keys("a")
	s.waitText("task " + parent.ID + " has no pending question")
	s.keys("q")
	s.waitText("kandev exited with status 0")
}
