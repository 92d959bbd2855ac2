package engine

import (
	"testing"

	"github.com/kandev/kandev/core"
)

// A finished task's queue waits for its reopen: a message left queued when
// the task was marked done must not start a turn that reopens it (ADR 0022),
// as it never could for a cancelled one.
func TestFinishedTasksAreHeld(t *testing.T) {
	k := &kernel{}
	e := &Engine{k: k}
	e.compose()
	role := &core.Ref{Kind: "role", Name: "mock"}
	for _, st := range []core.Status{core.StatusDone, core.StatusCancelled} {
		if got := e.Turns.held(core.Task{ID: "t1", Status: st, Assignee: role}); got != string(st) {
			t.Errorf("held(%s task) = %q, want %q", st, got, st)
		}
	}
	for _, st := range []core.Status{core.StatusTodo, core.StatusInProgress, core.StatusReview} {
		if got := e.Turns.held(core.Task{ID: "t1", Status: st, Assignee: role}); got != "" {
			t.Errorf("held(%s task) = %q, want nothing", st, got)
		}
	}
	for _, st := range []core.Status{core.StatusDone, core.StatusCancelled} {
		err := e.Messages.deliverable(core.Task{ID: "t1", Status: st})
		if core.CodeOf(err) != core.CodeConflict {
			t.Errorf("deliverable(%s task) = %v, want a conflict", st, err)
		}
	}
}
