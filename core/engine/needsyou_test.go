package engine

import (
	"testing"

	"github.com/kandev/kandev/core"
)

// The engine marks the moment a task starts needing a person, once: a new
// need, a higher urgency, a new question; not an update of a task already
// needing you as much, nor one that needs nobody.
func TestStartsNeedingYou(t *testing.T) {
	op, role := core.OperatorRef(), core.RoleRef("eng")
	running := core.Task{Status: core.StatusInProgress, Assignee: &role, Session: &core.SessionInfo{State: core.SessionRunning}}
	back := core.Task{Status: core.StatusTodo, Assignee: &op, YourTurn: true, Stalled: &core.Stall{Reason: core.StallReturned}}
	ask := func(id string) core.Task {
		t := running
		t.YourTurn = true
		t.PendingQuestion = &core.QuestionInfo{ID: id, Kind: core.QuestionPermission, Status: core.QuestionPending}
		return t
	}
	stuck := core.Task{Status: core.StatusInProgress, Assignee: &role, YourTurn: true, Stalled: &core.Stall{Reason: core.StallStuck}}
	done := back
	done.Status = core.StatusDone
	q1, q2 := ask("q1"), ask("q2")
	for _, c := range []struct {
		name          string
		before, after *core.Task
		want          bool
	}{
		{"comes back", &running, &back, true},
		{"asks", &running, &q1, true},
		{"asks again, same question", &q1, &q1, false},
		{"a new question", &q1, &q2, true},
		{"more urgent", &back, &stuck, true},
		{"less urgent", &stuck, &back, false},
		{"still back", &back, &back, false},
		{"done", &back, &done, false},
		{"runs", &back, &running, false},
		{"created asking", nil, &q1, true},
		{"created yours", nil, &back, false},
	} {
		if got := startsNeedingYou(c.before, c.after); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
