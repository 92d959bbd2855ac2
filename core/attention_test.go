package core

import (
	"encoding/json"
	"testing"
)

// "Needs you" ranks by urgency: a permission or a question an agent sits
// in first, then questions, stalls and escalations, then work handed back;
// finished work (done, cancelled, archived, discarded) needs nobody.
func TestNeedsYouRanks(t *testing.T) {
	op := OperatorRef()
	alice := Ref{Kind: RefPerson, Name: "alice"}
	role := RoleRef("eng")
	live := &SessionInfo{State: SessionRunning}
	ended := &SessionInfo{State: SessionCompleted}
	cases := []struct {
		name string
		t    Task
		want Attention
	}{
		{"permission", Task{Status: StatusInProgress, Assignee: &role, Session: live, YourTurn: true,
			PendingQuestion: &QuestionInfo{Kind: QuestionPermission, Status: QuestionPending}}, Attention{UrgencyBlocking, "permission"}},
		{"question in a live turn", Task{Status: StatusInProgress, Assignee: &role, Session: live, YourTurn: true,
			PendingQuestion: &QuestionInfo{Kind: QuestionUser, Status: QuestionPending}}, Attention{UrgencyBlocking, "question"}},
		{"question after the turn", Task{Status: StatusInProgress, Assignee: &role, Session: ended, YourTurn: true,
			PendingQuestion: &QuestionInfo{Kind: QuestionUser, Status: QuestionPending}}, Attention{UrgencyAttention, "question"}},
		{"parent question", Task{Status: StatusInProgress, Assignee: &role, Session: ended,
			PendingQuestion: &QuestionInfo{Kind: QuestionParent, Status: QuestionPending}}, Attention{}},
		{"stuck", Task{Status: StatusInProgress, Assignee: &role, YourTurn: true, Stalled: &Stall{Reason: StallStuck}}, Attention{UrgencyAttention, "stuck"}},
		{"escalated to you", Task{Status: StatusInProgress, Assignee: &op, YourTurn: true, Stalled: &Stall{Reason: "Stalled"}}, Attention{UrgencyAttention, "escalated"}},
		{"escalated to alice", Task{Status: StatusInProgress, Assignee: &alice, Stalled: &Stall{Reason: "Stalled"}}, Attention{UrgencyAttention, "escalated to alice"}},
		{"interrupted", Task{Status: StatusInProgress, Assignee: &role, Interrupted: true}, Attention{UrgencyAttention, "interrupted"}},
		{"back to you", Task{Status: StatusTodo, Assignee: &op, YourTurn: true, Stalled: &Stall{Reason: StallReturned}}, Attention{UrgencyReview, "back to you"}},
		{"your turn", Task{Status: StatusTodo, Assignee: &op, YourTurn: true}, Attention{UrgencyReview, "your turn"}},
		{"running", Task{Status: StatusInProgress, Assignee: &role, Session: live}, Attention{}},
		{"done", Task{Status: StatusDone, Assignee: &op, YourTurn: true}, Attention{}},
		{"cancelled", Task{Status: StatusCancelled, Assignee: &op}, Attention{}},
		{"archived", Task{Status: StatusTodo, Assignee: &op, YourTurn: true, Archived: true}, Attention{}},
		{"discarded", Task{Status: StatusTodo, Assignee: &op, YourTurn: true, Workspace: &Workspace{Mode: WorkspaceDiscarded}}, Attention{}},
	}
	for _, c := range cases {
		if got := c.t.NeedsYou(); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if !UrgencyAttention.Urgent() || UrgencyReview.Urgent() || !(UrgencyBlocking > UrgencyAttention && UrgencyAttention > UrgencyReview) {
		t.Fatal("urgencies out of order")
	}
	b, _ := json.Marshal(Attention{UrgencyBlocking, "permission"})
	var back Attention
	if string(b) != `{"urgency":"blocking","why":"permission"}` || json.Unmarshal(b, &back) != nil || back.Urgency != UrgencyBlocking {
		t.Fatalf("json %s -> %+v", b, back)
	}
}

// One meaning of running: a turn under way that does not wait on a person.
func TestRunningOneMeaning(t *testing.T) {
	for _, c := range []struct {
		t    Task
		want bool
	}{
		{Task{Session: &SessionInfo{State: SessionRunning}}, true},
		{Task{Session: &SessionInfo{State: SessionStarting}}, true},
		{Task{Session: &SessionInfo{State: SessionRunning}, PendingQuestion: &QuestionInfo{Kind: QuestionParent, Status: QuestionPending}}, true},
		{Task{Session: &SessionInfo{State: SessionRunning}, PendingQuestion: &QuestionInfo{Kind: QuestionPermission, Status: QuestionPending}}, false},
		{Task{Session: &SessionInfo{State: SessionWaitingForInput}}, false},
		{Task{Session: &SessionInfo{State: SessionCompleted}}, false},
		{Task{}, false},
	} {
		if got := c.t.Running(); got != c.want {
			t.Errorf("%+v: running %v, want %v", c.t.Session, got, c.want)
		}
	}
}
