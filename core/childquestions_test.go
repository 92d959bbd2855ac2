package core

import (
	"reflect"
	"testing"
	"time"
)

// TestChildQuestionsOrder: the question the parent's escalation names
// comes first, whenever it was asked; the rest follow oldest first; what
// is not a pending question to this parent is left out (ADR 0069).
func TestChildQuestionsOrder(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ask := func(id, qid string, mins int, mut func(*Task)) *Task {
		k := &Task{ID: id, Title: "t " + id, ParentID: "p", Status: StatusInProgress, PendingQuestion: &QuestionInfo{
			ID: qid, Kind: QuestionParent, Status: QuestionPending, ParentTaskID: "p", AskedAt: at.Add(time.Duration(mins) * time.Minute)}}
		if mut != nil {
			mut(k)
		}
		return k
	}
	kids := []*Task{
		ask("a", "qa", 1, nil),
		ask("b", "qb", 3, nil), // the one the escalation names, asked after a
		ask("c", "qc", 0, nil), // the oldest
		ask("d", "qd", 2, func(k *Task) { k.PendingQuestion.Status = QuestionAnswered }),
		ask("e", "qe", 2, func(k *Task) { k.PendingQuestion.Kind = QuestionUser }),
		ask("f", "qf", 2, func(k *Task) { k.Archived = true }),
		ask("g", "qg", 2, func(k *Task) { k.PendingQuestion.ParentTaskID = "other" }),
		ask("h", "qh", 2, func(k *Task) { k.Status = StatusDone }),
		{ID: "i", ParentID: "p"},
		nil,
	}
	ids := func(cqs []ChildQuestion) []string {
		var out []string
		for _, cq := range cqs {
			out = append(out, cq.TaskID+"/"+cq.Question.ID)
		}
		return out
	}
	parent := &Task{ID: "p", Stalled: &Stall{Reason: "Stalled", QuestionID: "qb"}}
	got := ChildQuestionsOf(parent, kids)
	if want := []string{"b/qb", "c/qc", "a/qa"}; !reflect.DeepEqual(ids(got), want) {
		t.Fatalf("order %v, want %v", ids(got), want)
	}
	if !got[0].Named || got[1].Named || got[2].Named || got[0].TaskTitle != "t b" {
		t.Fatalf("named marks %+v", got)
	}
	// Without an escalation naming one: oldest first.
	if got := ids(ChildQuestionsOf(&Task{ID: "p"}, kids)); !reflect.DeepEqual(got, []string{"c/qc", "a/qa", "b/qb"}) {
		t.Fatalf("unnamed order %v", got)
	}
	// The named question answered meanwhile: the rest, oldest first.
	kids[1].PendingQuestion.Status = QuestionAnswered
	if got := ids(ChildQuestionsOf(parent, kids)); !reflect.DeepEqual(got, []string{"c/qc", "a/qa"}) {
		t.Fatalf("after the named one %v", got)
	}
	if ChildQuestionsOf(nil, kids) != nil {
		t.Fatal("no parent, no questions")
	}
}

func TestWithPerson(t *testing.T) {
	for _, c := range []struct {
		t    *Task
		want bool
	}{
		{nil, false},
		{&Task{}, false},
		{&Task{Assignee: &Ref{Kind: RefRole, Name: "eng"}}, false},
		{&Task{Assignee: &Ref{Kind: RefPerson, Name: Operator}}, true},
		{&Task{Assignee: &Ref{Kind: RefPerson, Name: "alice"}}, true},
	} {
		if got := c.t.WithPerson(); got != c.want {
			t.Errorf("%+v: WithPerson = %v", c.t, got)
		}
	}
}
