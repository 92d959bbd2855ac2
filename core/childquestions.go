package core

import "sort"

// ChildQuestion is a subtask's pending question to its parent, as the
// parent shows it: the subtask, and its question.
type ChildQuestion struct {
	TaskID    string       `json:"task_id"`
	TaskTitle string       `json:"task_title"`
	Question  QuestionInfo `json:"question"`
	// Named: the parent's escalation names this question (Stall.QuestionID).
	Named bool `json:"named,omitempty"`
}

// ChildQuestionsOf lists the pending questions kids asked parent (kind
// parent, addressed to it), in the order a person holding parent answers
// them (ADR 0069): the one parent's escalation names first, then the rest
// by the time they were asked, oldest first (a tie by question id). A
// question that arrived while parent was with a person is here at once,
// whether or not its notice reached parent's agent. Archived or finished
// subtasks ask nothing.
func ChildQuestionsOf(parent *Task, kids []*Task) []ChildQuestion {
	if parent == nil {
		return nil
	}
	named := ""
	if parent.Stalled != nil {
		named = parent.Stalled.QuestionID
	}
	var out []ChildQuestion
	for _, k := range kids {
		if k == nil || k.Archived || k.Status.Terminal() || k.ParentID != parent.ID {
			continue
		}
		q := k.PendingQuestion
		if q == nil || q.Status != QuestionPending || q.Kind != QuestionParent || q.ParentTaskID != parent.ID {
			continue
		}
		out = append(out, ChildQuestion{TaskID: k.ID, TaskTitle: k.Title, Question: *q, Named: named != "" && q.ID == named})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Named != b.Named {
			return a.Named
		}
		if !a.Question.AskedAt.Equal(b.Question.AskedAt) {
			return a.Question.AskedAt.Before(b.Question.AskedAt)
		}
		return a.Question.ID < b.Question.ID
	})
	return out
}

// WithPerson reports whether a person holds t (its assignee is a person):
// its subtasks' questions are then that person's to answer (ADR 0069).
func (t *Task) WithPerson() bool {
	return t != nil && t.Assignee != nil && t.Assignee.IsPerson()
}
