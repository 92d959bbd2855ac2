package core

import (
	"encoding/json"
	"testing"
)

// TestStageOverTheLifecycle is ADR 0070's rule over every state a task
// passes through, each written as the engine leaves it (stored status,
// assignee, session, stall): the stage shown tells whether its agent ran,
// while the status keeps the seed's moves (a question keeps it; an
// escalation and a turn that comes back hand the task on as todo).
func TestStageOverTheLifecycle(t *testing.T) {
	op, alice, role, mgr := OperatorRef(), Ref{Kind: RefPerson, Name: "alice"}, Ref{Kind: RefRole, Name: "mock"}, Ref{Kind: RefRole, Name: "lead"}
	parent := Ref{Kind: RefTask, Name: "par001"}
	running := &SessionInfo{ID: "s1", Role: "mock", State: SessionRunning}
	completed := &SessionInfo{ID: "s1", Role: "mock", State: SessionCompleted}
	failed := &SessionInfo{ID: "s1", Role: "mock", State: SessionFailed}
	cancelled := &SessionInfo{ID: "s1", Role: "mock", State: SessionCancelled}
	cases := []struct {
		name string
		t    Task
		want Stage
	}{
		{"created", Task{Status: StatusTodo, Assignee: &role}, StageTodo},
		{"created for a person", Task{Status: StatusTodo, Assignee: &op}, StageTodo},
		{"running", Task{Status: StatusInProgress, Assignee: &role, Session: running}, StageInProgress},
		{"question to you in its turn", Task{Status: StatusInProgress, Assignee: &role, Session: running, YourTurn: true,
			PendingQuestion: &QuestionInfo{Kind: QuestionUser, Status: QuestionPending}}, StageInProgress},
		{"question to you after its turn", Task{Status: StatusInProgress, Assignee: &role, Session: completed, YourTurn: true,
			PendingQuestion: &QuestionInfo{Kind: QuestionUser, Status: QuestionPending}}, StageInProgress},
		{"question to its parent", Task{Status: StatusInProgress, Assignee: &role, Session: completed,
			PendingQuestion: &QuestionInfo{Kind: QuestionParent, Status: QuestionPending}}, StageInProgress},
		{"back to you", Task{Status: StatusTodo, Assignee: &op, Session: completed, YourTurn: true,
			Stalled: &Stall{Reason: StallReturned}}, StageBack},
		{"handed to you for review", Task{Status: StatusReview, Assignee: &op, Session: completed, YourTurn: true}, StageReview},
		{"handed to its parent for sign-off", Task{Status: StatusReview, Assignee: &parent, Session: completed}, StageReview},
		{"escalated to you after a failed run", Task{Status: StatusTodo, Assignee: &op, Session: failed, YourTurn: true,
			Stalled: &Stall{Reason: "Stalled", Failed: true}}, StageBack},
		{"escalated to alice", Task{Status: StatusTodo, Assignee: &alice, Session: completed,
			Stalled: &Stall{Reason: "Stalled"}}, StageBack},
		{"escalated to a manager role, its turn not yet taken", Task{Status: StatusTodo, Assignee: &mgr, Session: completed,
			Stalled: &Stall{Reason: "Stalled"}}, StageTodo},
		{"escalated to a manager role, on it", Task{Status: StatusInProgress, Assignee: &mgr, Session: running,
			Stalled: &Stall{Reason: "Stalled"}}, StageInProgress},
		{"stuck", Task{Status: StatusInProgress, Assignee: &role, Session: completed, YourTurn: true,
			Stalled: &Stall{Reason: StallStuck}}, StageInProgress},
		{"budget reached, with you", Task{Status: StatusTodo, Assignee: &op, Session: cancelled, YourTurn: true,
			Stalled: &Stall{Reason: StallBudget}}, StageBack},
		{"budget reached, a subtask cut", Task{Status: StatusInProgress, Assignee: &role, Session: cancelled, Queued: 1}, StageInProgress},
		{"stopped", Task{Status: StatusReview, Assignee: &role, Session: cancelled, Halted: true}, StageReview},
		{"interrupted", Task{Status: StatusInProgress, Assignee: &role, Session: cancelled, Interrupted: true, Queued: 1}, StageInProgress},
		{"done", Task{Status: StatusDone, Assignee: &op, Session: completed}, StageDone},
		{"cancelled", Task{Status: StatusCancelled, Assignee: &op, Session: completed}, StageCancelled},
		{"done without a run", Task{Status: StatusDone, Assignee: &op}, StageDone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := StageOf(&c.t); got != c.want {
				t.Fatalf("StageOf = %s, want %s (status %s)", got, c.want, c.t.Status)
			}
		})
	}
	if StageOf(nil) != StageTodo {
		t.Fatal("a nil task is not todo")
	}
}

// Every stage has its own glyph, and every status is shown as some stage:
// a status added without a stage would read "?".
func TestEveryStageHasAGlyph(t *testing.T) {
	seen := map[string]Stage{}
	for _, s := range Stages {
		g := s.Glyph()
		if g == "?" {
			t.Fatalf("stage %s has no glyph", s)
		}
		if o, dup := seen[g]; dup {
			t.Fatalf("stages %s and %s share the glyph %s", o, s, g)
		}
		seen[g] = s
	}
	for _, st := range Statuses {
		if g := StageOf(&Task{Status: st}).Glyph(); g == "?" {
			t.Fatalf("status %s is shown with no glyph", st)
		}
	}
}

// The stage travels in the task's JSON as "stage", as the daemon fills it.
func TestStageInTaskJSON(t *testing.T) {
	op := OperatorRef()
	tk := Task{ID: "hi0001", Status: StatusTodo, Assignee: &op, Session: &SessionInfo{ID: "s1", State: SessionCompleted}}
	tk.Stage = StageOf(&tk)
	b, err := json.Marshal(tk)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["stage"] != "back" || m["status"] != "todo" {
		t.Fatalf("stage %v status %v in %s, want back and todo", m["stage"], m["status"], b)
	}
	var back Task
	if err := json.Unmarshal(b, &back); err != nil || back.Stage != StageBack {
		t.Fatalf("read back stage %q (%v), want back", back.Stage, err)
	}
}
