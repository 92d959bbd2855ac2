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
