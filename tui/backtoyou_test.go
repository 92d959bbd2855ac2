package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
)

// sayHi is the demo's "Say hi" task after its turn: the agent said hi and
// ended without handing it on, so it came back to the operator who created
// it (ADR 0025). Its session completed normally.
func sayHi() core.Task {
	return core.Task{ID: "hi0001", Title: "Say hi", Status: core.StatusTodo, Profile: "mock", CreatedBy: core.ParseBy("person:operator"),
		CreatedAt: ago(time.Minute), UpdatedAt: ago(time.Minute), YourTurn: true,
		Assignee: &core.Ref{Kind: "person", Name: core.Operator}, HandedBy: &core.Ref{Kind: "role", Name: "mock"},
		Stalled: &core.Stall{Reason: core.StallReturned, From: core.ParseBy("role:mock"), Detail: "hi\n", At: ago(time.Minute)},
		Session: &core.SessionInfo{ID: "s-hi0001", TaskID: "hi0001", Role: "mock", State: core.SessionCompleted, Turns: 1,
			EndReason: "the task was handed to person:operator", CreatedAt: ago(time.Minute), UpdatedAt: ago(time.Minute)}}
}

// A task back to you reads as your turn with the agent's last words: no
// ESCALATED badge, no error, and it is not in the failed/stopped/escalated
// filter; w finds it.
func TestBackToYouIsYourTurn(t *testing.T) {
	hi := sayHi()
	if r := rowFor(&hi, testNow, 0); len(r.badges) != 0 {
		var got []string
		for _, b := range r.badges {
			got = append(got, badgeText[b])
		}
		t.Fatalf("badges %v, want none", got)
	}
	d := newDriver(t, newFake(hi), 100, 30)
	d.mustShow("Say hi", "@you")
	d.mustNotShow("ESCALATED")
	d.keys("w")
	if d.m.tree.selected != "hi0001" {
		t.Fatalf("w selected %q, want the task back to you", d.m.tree.selected)
	}
	d.mustShow("your turn", "ended without handing on: hi")
	d.mustNotShow("ESCALATED", "error")
	d.keys("f")
	d.mustShow("[waiting on you]", "hi0001")
	d.keys("f", "f", "f")
	d.mustShow("[failed/stopped/escalated]")
	if v := d.view(); strings.Contains(v, "Say hi") {
		t.Fatalf("the failed/stopped/escalated filter shows a task back to you:\n%s", v)
	}
}

// A task whose run a daemon exit cut short, left by --no-resume, is marked
// INTERRUPTED in its row and detail; the "waiting on you" filter and w
// find it.
func TestInterruptedTaskIsMarkedAndFound(t *testing.T) {
	cut := core.Task{ID: "cut001", Title: "Cut by a reboot", Status: core.StatusInProgress, Profile: "mock",
		CreatedAt: ago(time.Hour), UpdatedAt: ago(time.Minute), Queued: 1, Interrupted: true,
		Assignee: &core.Ref{Kind: "role", Name: "mock"},
		Session: &core.SessionInfo{ID: "s-cut001", TaskID: "cut001", Role: "mock", State: core.SessionCancelled,
			EndReason: core.SessionInterruptedPrefix + "shut down", CreatedAt: ago(time.Hour), UpdatedAt: ago(time.Minute)}}
	d := newDriver(t, newFake(append(demoTasks()[:2], cut)...), 100, 30)
	if !strings.Contains(d.rowOf("cut001"), "INTERRUPTED") {
		t.Fatalf("row %q, want INTERRUPTED", d.rowOf("cut001"))
	}
	d.keys("w")
	if d.m.tree.selected != "cut001" {
		t.Fatalf("w selected %q, want the interrupted task", d.m.tree.selected)
	}
	d.mustShow("a daemon exit cut its run short; r resumes it")
	d.keys("f")
	d.mustShow("[waiting on you]", "cut001")
}

// Reopening / edits the filter in force: the input starts with its text,
// so a backspace shortens it rather than starting a second filter.
func TestFilterReopensWithItsText(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 80, 24)
	d.keys("/")
	d.typeText("migr")
	d.keys("enter")
	d.mustShow(`filter: "migr"`)
	d.keys("/")
	if got := d.m.filterInput.Value(); got != "migr" {
		t.Fatalf("reopened filter input holds %q, want the filter in force", got)
	}
	for range 4 {
		d.send(tea.KeyMsg{Type: tea.KeyBackspace})
	}
	d.keys("enter")
	d.mustNotShow("filter:")
}

// The tree shows each task by its stage (core.StageOf, ADR 0070): work
// whose agent ran and came back to you reads ◑, never ○ todo as if it had
// not started, whether it came back after its turn, escalated after a
// failed run or was halted by its budget; a question keeps in progress;
// a stop is to review; only a task nothing ran on is ○. The detail pane
// and the zoomed header name the stage.
func TestTreeShowsWhetherWorkRan(t *testing.T) {
	op := &core.Ref{Kind: "person", Name: core.Operator}
	role := &core.Ref{Kind: "role", Name: "mock"}
	ended := func(id string, st core.SessionState) *core.SessionInfo {
		return &core.SessionInfo{ID: "s-" + id, TaskID: id, Role: "mock", State: st, Turns: 1, CreatedAt: ago(time.Minute), UpdatedAt: ago(time.Minute)}
	}
	task := func(id, title string, st core.Status, who *core.Ref) core.Task {
		return core.Task{ID: id, Title: title, Status: st, Profile: "mock", Assignee: who, CreatedAt: ago(time.Hour), UpdatedAt: ago(time.Minute)}
	}
	created := task("new001", "Never started", core.StatusTodo, role)
	asked := task("ask001", "Asked you", core.StatusInProgress, role)
	asked.Session, asked.YourTurn = ended("ask001", core.SessionCompleted), true
	asked.PendingQuestion = &core.QuestionInfo{ID: "q1", Kind: core.QuestionUser, Status: core.QuestionPending, Questions: []core.QuestionItem{{Prompt: "Which DB?"}}}
	hi := sayHi()
	failed := task("esc001", "Failed and escalated", core.StatusTodo, op)
	failed.Session, failed.YourTurn = ended("esc001", core.SessionFailed), true
	failed.Stalled = &core.Stall{Reason: "Stalled", From: core.ParseBy("role:mock"), Detail: "run failed: exit 3", At: ago(time.Minute), Failed: true}
	budget := task("bud001", "Spent its budget", core.StatusTodo, op)
	budget.Session, budget.YourTurn = ended("bud001", core.SessionCancelled), true
	budget.Stalled = &core.Stall{Reason: core.StallBudget, From: core.ParseBy("role:mock"), Detail: "$1.00 of $1.00", At: ago(time.Minute)}
	stopped := task("stp001", "Stopped", core.StatusReview, role)
	stopped.Session, stopped.Halted = ended("stp001", core.SessionCancelled), true
	review := task("rev001", "Handed to you", core.StatusReview, op)
	review.Session, review.YourTurn = ended("rev001", core.SessionCompleted), true

	d := newDriver(t, newFake(created, asked, hi, failed, budget, stopped, review), 120, 30)
	for id, glyph := range map[string]string{"new001": "○", "ask001": "●", "hi0001": "◑", "esc001": "◑", "bud001": "◑", "stp001": "◐", "rev001": "◐"} {
		row, _, _ := strings.Cut(d.rowOf(id), "│") // the tree's side
		if !strings.Contains(row, glyph) {
			t.Errorf("row of %s %q, want %s", id, row, glyph)
		}
		if id != "new001" && strings.Contains(row, "○") {
			t.Errorf("row of %s %q reads todo although its agent ran", id, row)
		}
	}
	for d.m.tree.selected != "hi0001" {
		d.keys("j")
	}
	d.mustShow("hi0001 · ◑ back")
	d.mustNotShow("◑ todo", "○ todo")
}
