package daemon_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// A tree where nothing runs, nobody is asked and no run waits is stalled
// by the rules (ADR 0046): a subtask an agent created stalls and is
// reported to its creating task; that task's turn ends without acting on
// it; the subtask, still open, used to hold its parent, which sat
// in_progress beside an escalated child with nothing running and nothing
// in kandev status. Now the parent stalls too and reaches a person, and
// status and the TUI's "waiting on you" list it.
func TestStalledSubtaskDoesNotHoldItsParent(t *testing.T) {
	d := daemontest.Start(t)
	root := create(t, d, api.CreateTaskInput{Title: "root", Start: true, Prompt: strings.Join([]string{
		call("create_task_kandev", map[string]any{"title": "child", "prompt": "mock: say I give up"}),
		"mock: say delegated",
	}, "\n")})
	w, code := waitFor(t, d, root.ID)
	if code != 12 || w.Outcome != "escalated" {
		dump(t, d, root.ID)
		t.Fatalf("wait root: exit %d %+v", code, w)
	}
	got := get(t, d, root.ID)
	if got.Stalled == nil || got.Stalled.Reason != "Stalled" || !strings.Contains(got.Stalled.Detail, "stalled subtask") ||
		got.Assignee == nil || !got.Assignee.IsOperator() || got.BackToYou() {
		dump(t, d, root.ID)
		t.Fatalf("root: stalled %+v assignee %+v", got.Stalled, got.Assignee)
	}
	ts, err := d.Client.ListTasks(context.Background(), api.ListTasksInput{Root: root.ID})
	if err != nil || len(ts) != 2 {
		t.Fatalf("tree: %v %v", ts, err)
	}
	child := ts[1]
	if !strings.Contains(got.Stalled.Detail, child.ID) || !child.Escalated() {
		t.Fatalf("child %+v, root detail %q", child.Stalled, got.Stalled.Detail)
	}
	if out := d.MustRun("status"); !strings.Contains(out, root.ID+"  ◑ back  escalated") {
		t.Fatalf("status does not list the root:\n%s", out)
	}
}
