package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/notify"
)

// escalatedTwoChildren is issue 38's tree: two autopilot children ask
// their parent; the parent's agent answers a's question (the one whose
// text carries "route: answer") and leaves b's unanswered, so the parent
// is escalated to the operator naming b's question. Then, a having read
// its answer, a asks again (gate a2) while the parent is with the
// operator: that question never reaches the parent's agent.
type escalatedTwoChildren struct {
	parent, a, b core.Task
	qa, qb, qa2  string
}

func startEscalatedTwoChildren(t *testing.T, d *daemontest.Daemon) escalatedTwoChildren {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	gate, gateA2 := filepath.Join(dir, "go"), filepath.Join(dir, "a2")
	var w escalatedTwoChildren
	w.parent = create(t, d, api.CreateTaskInput{Title: "parent", Start: true, Prompt: strings.Join([]string{
		"mock: on question: if route=answer: " + strings.TrimPrefix(reply("${child_task_id}", "blue\nround: two", "${question_id}"), "mock: "),
		"mock: waitfile " + gate,
	}, "\n")})
	w.a = create(t, d, api.CreateTaskInput{Title: "pick the colour", ParentID: w.parent.ID, Autopilot: true, Start: true, Prompt: strings.Join([]string{
		"mock: on answer: if round=two: waitfile " + gateA2,
		"mock: on answer: if round=two: " + strings.TrimPrefix(askParent("Which size?"), "mock: "),
		askParent("Which colour?\nroute: answer"),
	}, "\n")})
	w.b = create(t, d, api.CreateTaskInput{Title: "pick the database", ParentID: w.parent.ID, Autopilot: true, Start: true,
		Prompt: askParent("Which database?")})
	w.qa, w.qb = waitQuestion(t, d, w.a.ID).ID, waitQuestion(t, d, w.b.ID).ID

	// Only the recorded parent, or a person holding it, answers: while the
	// parent is with its role, the operator cannot.
	_, err := d.Client.AnswerQuestion(ctx, w.b.ID, api.AnswerInput{Text: "sqlite"})
	if !(core.CodeOf(err) == core.CodeForbidden) || !strings.Contains(err.Error(), "only it, or a person holding it, may answer") {
		t.Fatalf("the operator answered for a parent with its role: %v", err)
	}
	if _, err := d.Client.AnswerQuestion(ctx, w.parent.ID, api.AnswerInput{Text: "sqlite"}); !(core.CodeOf(err) == core.CodeNotFound) {
		t.Fatalf("an answer on a parent with its role: %v, want no question of its own", err)
	}

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var p core.Task
	daemontest.Eventually(t, wait, "the parent escalated to the operator", func() bool {
		p = get(t, d, w.parent.ID)
		return p.Assignee != nil && p.Assignee.IsOperator() && p.Stalled != nil
	})
	if p.Stalled.QuestionID != w.qb || !strings.Contains(p.Stalled.Detail, "unanswered question "+w.qb) {
		dump(t, d, w.parent.ID)
		t.Fatalf("the escalation names %q (%q), want b's %s", p.Stalled.QuestionID, p.Stalled.Detail, w.qb)
	}
	if s := questionStatus(t, d, w.a.ID, w.qa); s != string(core.QuestionAnswered) {
		t.Fatalf("a's first question is %s", s)
	}

	if err := os.WriteFile(gateA2, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, wait, "a's second question", func() bool {
		q := get(t, d, w.a.ID).PendingQuestion
		if q != nil && q.ID != w.qa && q.Status == core.QuestionPending {
			w.qa2 = q.ID
			return true
		}
		return false
	})
	return w
}

// TestEscalatedParentListsEveryChildQuestion: the questions waiting on a
// parent that is with a person are all on it (task show), the one its
// escalation names first, a question that arrived while it was with the
// person among them at once, though its agent never saw it; an answer
// given on the parent answers them in that order, each reaching its child
// as its answer, and nothing is left waiting (ADR 0069).
func TestEscalatedParentListsEveryChildQuestion(t *testing.T) {
	hook := filepath.Join(t.TempDir(), "hook.log")
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_NOTIFY_COMMAND=cat >> "+hook))
	ctx := context.Background()
	w := startEscalatedTwoChildren(t, d)

	// a's second question is the operator's at once: a notification says
	// so, naming it.
	daemontest.Eventually(t, wait, "the notification of a's second question", func() bool {
		b, _ := os.ReadFile(hook)
		for _, l := range strings.Split(string(b), "\n") {
			var ev notify.Event
			if json.Unmarshal([]byte(l), &ev) == nil && ev.TaskID == w.parent.ID && ev.Text == "subtask "+w.a.ID+" asks: Which size?" &&
				ev.Summary == "task "+w.parent.ID+" has a question from subtask "+w.a.ID+" for you: parent" {
				return true
			}
		}
		return false
	})

	p := get(t, d, w.parent.ID)
	if len(p.ChildQuestions) != 2 || p.ChildQuestions[0].Question.ID != w.qb || !p.ChildQuestions[0].Named ||
		p.ChildQuestions[0].TaskID != w.b.ID || p.ChildQuestions[1].Question.ID != w.qa2 || p.ChildQuestions[1].TaskID != w.a.ID {
		t.Fatalf("child questions %+v, want b's %s (named) then a's %s", p.ChildQuestions, w.qb, w.qa2)
	}
	for _, m := range conversation(t, d, w.parent.ID) {
		if m.Kind == core.MsgPrompt && strings.Contains(m.Text, w.qa2) {
			t.Fatalf("a's second question reached the parent's agent: %q", m.Text)
		}
	}
	out := d.MustRun("task", "show", w.parent.ID)
	ib, ia := strings.Index(out, "1. "+w.qb+" from subtask "+w.b.ID), strings.Index(out, "2. "+w.qa2+" from subtask "+w.a.ID)
	if !strings.Contains(out, "questions to it:  2 from subtasks, yours to answer") || ib < 0 || ia < ib || !strings.Contains(out, "Which size?") {
		t.Fatalf("task show:\n%s", out)
	}

	// The first answer given on the parent is b's, the named one.
	r, err := d.Client.AnswerQuestion(ctx, w.parent.ID, api.AnswerInput{Text: "postgres"})
	if err != nil || r.TaskID != w.b.ID || r.QuestionID != w.qb || r.Status != "answered" {
		t.Fatalf("first answer: %+v %v", r, err)
	}
	daemontest.Eventually(t, wait, "b to read its answer", func() bool {
		for _, m := range conversation(t, d, w.b.ID) {
			if m.Kind == core.MsgPrompt && strings.Contains(metaField(m, "rendered"),
				"Your parent task "+w.parent.ID+" is with the operator, who answered your question "+w.qb+" in its place:\n\npostgres") {
				return true
			}
		}
		return false
	})
	// Answered again: a no-op that says so.
	if r, err := d.Client.AnswerQuestion(ctx, w.b.ID, api.AnswerInput{QuestionID: w.qb, Text: "sqlite"}); err != nil || r.Status != "already_answered" {
		t.Fatalf("a second answer to b: %+v %v", r, err)
	}
	if p := get(t, d, w.parent.ID); len(p.ChildQuestions) != 1 || p.ChildQuestions[0].Question.ID != w.qa2 {
		t.Fatalf("after b's answer: %+v", p.ChildQuestions)
	}

	// Then a's, by the subtask itself this time.
	r, err = d.Client.AnswerQuestion(ctx, w.a.ID, api.AnswerInput{Text: "large"})
	if err != nil || r.TaskID != w.a.ID || r.QuestionID != w.qa2 || r.Status != "answered" {
		t.Fatalf("second answer: %+v %v", r, err)
	}
	daemontest.Eventually(t, wait, "a to read its answer", func() bool {
		return promptSent(t, d, w.a.ID, "who answered your question "+w.qa2+" in its place:\n\nlarge")
	})
	for _, c := range []struct{ task, q string }{{w.a.ID, w.qa}, {w.a.ID, w.qa2}, {w.b.ID, w.qb}} {
		if s := questionStatus(t, d, c.task, c.q); s != string(core.QuestionAnswered) {
			t.Fatalf("question %s of %s is %s", c.q, c.task, s)
		}
	}
	// Nothing waits unseen: no question on the parent, and the notice of
	// a's second question, queued on the parent while it was with the
	// operator, is withdrawn: its agent is never asked it.
	p = get(t, d, w.parent.ID)
	if len(p.ChildQuestions) != 0 || p.Queued != 0 {
		q, _ := d.Client.TaskQueue(ctx, w.parent.ID)
		t.Fatalf("parent: child questions %+v, queued %d (%+v)", p.ChildQuestions, p.Queued, q)
	}
	if _, err := d.Client.AnswerQuestion(ctx, w.parent.ID, api.AnswerInput{Text: "more"}); !(core.CodeOf(err) == core.CodeNotFound) {
		t.Fatalf("an answer with nothing left: %v", err)
	}
}

// promptSent: a prompt sent to the task's agent contains text.
func promptSent(t *testing.T, d *daemontest.Daemon, id, text string) bool {
	t.Helper()
	for _, m := range conversation(t, d, id) {
		if m.Kind == core.MsgPrompt && (strings.Contains(m.Text, text) || strings.Contains(metaField(m, "rendered"), text)) {
			return true
		}
	}
	return false
}
